import Foundation

/// A thread whose end can be waited for, with a bound.
final class JoinableThread: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var thread: Thread?

    init(_ body: @escaping @Sendable () -> Void) {
        let done = self.done
        thread = Thread {
            body()
            done.signal()
        }
        thread?.start()
    }

    /// True if the thread finished within `seconds`.
    @discardableResult
    func join(seconds: Double) -> Bool {
        done.wait(timeout: .now() + seconds) == .success
    }
}

/// A counter shared between two threads.
final class SharedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func add(_ n: Int) {
        lock.lock()
        value += n
        lock.unlock()
    }
    func get() -> Int {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}
