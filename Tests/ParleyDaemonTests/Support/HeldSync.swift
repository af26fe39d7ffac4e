import Foundation
import XCTest

/// Group commit in a test (Store+GroupCommit.swift): a WAL sync that waits until the test
/// lets it through, and the syncer's hops back to "the store's thread", which the test runs.
final class HeldSync: @unchecked Sendable {
    let gate = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var work: [@Sendable () -> Void] = []

    func sync() { gate.wait() }

    func hop(_ w: @escaping @Sendable () -> Void) {
        lock.lock()
        work.append(w)
        lock.unlock()
    }

    /// Lets one sync through and runs what the syncer sent back (waiting, bounded, for it).
    func release(within seconds: Double = 10) {
        gate.signal()
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            lock.lock()
            let arrived = work
            work.removeAll()
            lock.unlock()
            if !arrived.isEmpty {
                arrived.forEach { $0() }
                return
            }
            usleep(1_000)
        }
        XCTFail("the syncer sent nothing back")
    }
}
