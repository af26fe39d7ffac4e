import XCTest

@testable import ParleyDaemon

/// A control connection's output bookkeeping: lines in order, held behind unsynced commits,
/// released in order, one buffer per turn.
final class ControlOutputTests: XCTestCase {
    private struct Refused: Error {}

    private func line(_ text: String) -> (inout [UInt8]) throws -> Void {
        { $0.append(contentsOf: Array(text.utf8)) }
    }

    private func take(_ output: inout ControlOutput) -> String {
        var text = ""
        _ = output.takeReady { text = String(decoding: $0, as: UTF8.self) }
        return text
    }

    func testLinesGatherInOneBufferInOrderAndItsCapacityStays() {
        var output = ControlOutput()
        for k in 1...50 { output.append(heldBehind: nil, accounted: false, line("a\(k)")) }
        XCTAssertEqual(take(&output), (1...50).map { "a\($0)\n" }.joined())
        let capacity = output.ready.capacity
        XCTAssertGreaterThan(capacity, 0)
        output.append(heldBehind: nil, accounted: false, line("b"))
        XCTAssertEqual(output.ready.capacity, capacity, "the buffer is reused, not reallocated")
        XCTAssertEqual(take(&output), "b\n")
    }

    func testALineThatFailsToEncodeLeavesNothing() {
        var output = ControlOutput()
        output.append(heldBehind: nil, accounted: true, line("ok"))
        let size = output.append(heldBehind: nil, accounted: true) {
            $0.append(contentsOf: Array("half".utf8))
            throw Refused()
        }
        XCTAssertNil(size)
        XCTAssertEqual(output.readyAccounted.count, 1)
        XCTAssertEqual(take(&output), "ok\n")
        output.append(heldBehind: 3, accounted: false, line("held"))
        XCTAssertNil(output.append(heldBehind: nil, accounted: false) { _ in throw Refused() })
        output.releaseDurable { _ in true }
        XCTAssertEqual(take(&output), "held\n")
    }

    /// Group commit: a line behind an unsynced commit is held, and so is every line after it
    /// (a line with no commit of its own keeps its place); release stops at the first line
    /// whose commit is not durable.
    func testHeldLinesKeepTheirPlaceAndAreReleasedInOrder() {
        var output = ControlOutput()
        output.append(heldBehind: nil, accounted: false, line("first"))
        output.append(heldBehind: 5, accounted: true, line("send-5"))
        output.append(heldBehind: nil, accounted: false, line("whoami"))
        output.append(heldBehind: 7, accounted: true, line("send-7"))
        output.append(heldBehind: nil, accounted: true, line("event"))
        XCTAssertEqual(output.firstHeldCommit, 5)
        XCTAssertEqual(take(&output), "first\n")
        var durable: UInt64 = 4
        XCTAssertEqual(output.releaseDurable { $0 <= durable }, 0)
        XCTAssertEqual(take(&output), "")
        durable = 6
        XCTAssertEqual(output.releaseDurable { $0 <= durable }, 2)
        XCTAssertEqual(output.firstHeldCommit, 7)
        XCTAssertEqual(output.readyAccounted.count, 1)
        XCTAssertEqual(output.readyAccounted.bytes, "send-5\n".utf8.count)
        XCTAssertEqual(take(&output), "send-5\nwhoami\n")
        // The fail notice goes out ahead of what is still held.
        output.append(heldBehind: nil, accounted: false, ignoringHeld: true, line("bye"))
        XCTAssertEqual(take(&output), "bye\n")
        durable = 7
        XCTAssertEqual(output.releaseDurable { $0 <= durable }, 2)
        XCTAssertFalse(output.isHolding)
        XCTAssertEqual(output.heldBytes, 0)
        XCTAssertEqual(take(&output), "send-7\nevent\n")
    }
}
