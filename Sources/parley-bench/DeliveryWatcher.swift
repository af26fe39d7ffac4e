import Foundation

/// A control connection subscribed to a daemon's notifications that counts
/// `message.delivered`: for a direct message, the peer acknowledged it (stored); for a
/// room message, every member did (docs/CONTROL.md). Rows 11 and 13 end a measurement
/// there, on the sender's own account of delivery.
final class DeliveryWatcher {
    let line: ControlLine
    private(set) var delivered = 0
    private static let marker = Array("\"method\":\"message.delivered\"".utf8)

    init(daemon: Parleyd) throws(BenchError) {
        line = try ControlLine(path: daemon.socketPath)
        _ = try line.call("messages.subscribe")
    }

    /// Reads notifications until `target` deliveries were counted since the start;
    /// returns the monotonic time the last one was read.
    func waitFor(_ target: Int, deadline: Deadline) throws(BenchError) -> UInt64 {
        while delivered < target {
            let l = try line.nextLine(deadline: deadline)
            if ByteScan.contains(Self.marker, in: l) { delivered += 1 }
        }
        return Clock.nowNs()
    }

    func close() { line.close() }
}
