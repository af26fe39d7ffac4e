import ParleyCore
import XCTest

@testable import ParleyNodeCore

final class SendWindowTests: XCTestCase {
    let clock = ManualNodeClock()

    func testWindowClosesByCount() {
        var w = SendWindow(limits: SendWindowLimits(maxCount: 3, maxBytes: 1_000_000, ackTimeout: .seconds(30)))
        XCTAssertEqual(w.freeSlots, 3)
        for n in 1...3 {
            XCTAssertTrue(w.admit(messageID(UInt8(n)), bytes: 10, lane: .direct, sequence: Int64(n), now: clock.now))
        }
        XCTAssertEqual(w.freeSlots, 0)
        XCTAssertFalse(w.admit(messageID(4), bytes: 10, lane: .direct, sequence: 4, now: clock.now))
        XCTAssertEqual(w.directSentThrough, 3, "a refused item does not move the cursor")
        _ = w.acknowledge([messageID(2)])
        XCTAssertEqual(w.freeSlots, 1)
        XCTAssertTrue(w.admit(messageID(4), bytes: 10, lane: .direct, sequence: 4, now: clock.now))
        XCTAssertEqual(w.directSentThrough, 4)
    }

    func testWindowClosesByBytesButNeverStarvesOneLargeItem() {
        var w = SendWindow(limits: SendWindowLimits(maxCount: 100, maxBytes: 100, ackTimeout: .seconds(30)))
        XCTAssertTrue(w.admit(messageID(1), bytes: 60, lane: .direct, now: clock.now))
        XCTAssertTrue(
            w.admit(messageID(2), bytes: 60, lane: .roomChat, now: clock.now), "below the bound before it: admitted")
        XCTAssertEqual(w.bytesInFlight, 120)
        XCTAssertEqual(w.freeSlots, 0)
        XCTAssertFalse(w.admit(messageID(3), bytes: 1, lane: .direct, now: clock.now))
        _ = w.acknowledge([messageID(1), messageID(2)])
        XCTAssertEqual(w.bytesInFlight, 0)
        XCTAssertTrue(
            w.admit(messageID(3), bytes: 500, lane: .direct, now: clock.now),
            "a body larger than the bound still goes alone")
    }

    /// A refusal frees the slots like an ack; refused edits, deletes and reactions are
    /// remembered for the session (the pump does not offer them again), chats are not
    /// (their cursor already keeps them off the session).
    func testARefusalFreesTheSlotAndRemembersRefusedActions() {
        var w = SendWindow(limits: SendWindowLimits(maxCount: 2, maxBytes: 1_000_000, ackTimeout: .seconds(30)))
        XCTAssertTrue(w.admit(messageID(1), bytes: 10, lane: .messageAction, now: clock.now))
        XCTAssertTrue(w.admit(messageID(2), bytes: 10, lane: .direct, sequence: 1, now: clock.now))
        let left = w.refuse([messageID(1), messageID(2)])
        XCTAssertEqual(left.actionItems, [messageID(1)])
        XCTAssertEqual(w.freeSlots, 2)
        XCTAssertEqual(w.refusedActions, [messageID(1)])
    }

    func testAnItemInFlightIsNotAdmittedTwice() {
        var w = SendWindow(limits: SendWindowLimits())
        XCTAssertTrue(w.admit(messageID(1), bytes: 5, lane: .roomOperation, now: clock.now))
        XCTAssertFalse(w.admit(messageID(1), bytes: 5, lane: .roomOperation, now: clock.now))
        XCTAssertEqual(w.count, 1)
        XCTAssertEqual(w.bytesInFlight, 5)
    }

    func testAcknowledgementSaysWhichLanesItTouched() {
        var w = SendWindow(limits: SendWindowLimits())
        _ = w.admit(messageID(1), bytes: 1, lane: .direct, now: clock.now)
        _ = w.admit(messageID(2), bytes: 1, lane: .roomOperation, now: clock.now)
        _ = w.admit(messageID(3), bytes: 1, lane: .roomChat, now: clock.now)
        let ack = w.acknowledge([messageID(1), messageID(2), messageID(3), messageID(9)])
        XCTAssertEqual(ack.roomItems, [messageID(2), messageID(3)])
        XCTAssertEqual(ack.unknown, [messageID(9)], "an id sent on an earlier session is reported, not dropped")
        XCTAssertTrue(w.isEmpty)
    }

    func testAckTimeoutResendsFromTheStart() {
        var w = SendWindow(limits: SendWindowLimits(maxCount: 10, maxBytes: 1_000, ackTimeout: .seconds(30)))
        _ = w.admit(messageID(1), bytes: 10, lane: .direct, sequence: 7, now: clock.now)
        clock.advance(.seconds(20))
        _ = w.admit(messageID(2), bytes: 10, lane: .direct, sequence: 8, now: clock.now)
        clock.advance(.seconds(10))
        XCTAssertFalse(w.resetIfAckTimedOut(now: clock.now), "exactly the timeout has not passed it")
        clock.advance(.milliseconds(1))
        XCTAssertTrue(w.resetIfAckTimedOut(now: clock.now))
        XCTAssertTrue(w.isEmpty)
        XCTAssertEqual(w.bytesInFlight, 0)
        XCTAssertEqual(w.directSentThrough, 0, "the next pump reads the outbox from its start")
        XCTAssertTrue(
            w.admit(messageID(1), bytes: 10, lane: .direct, sequence: 7, now: clock.now), "the same message goes again")
        XCTAssertFalse(w.resetIfAckTimedOut(now: clock.now))
    }

    func testAnAcknowledgedWindowNeverTimesOut() {
        var w = SendWindow(limits: SendWindowLimits(ackTimeout: .seconds(1)))
        _ = w.admit(messageID(1), bytes: 1, lane: .direct, now: clock.now)
        _ = w.acknowledge([messageID(1)])
        clock.advance(.seconds(60))
        XCTAssertFalse(w.resetIfAckTimedOut(now: clock.now))
    }
}

final class OutboxLedgerTests: XCTestCase {
    func testSkipsTheQueryOnlyWhenEverythingQueuedThisRunWasSent() {
        var l = OutboxLedger()
        let bob = identity(2)
        XCTAssertTrue(l.mayHaveUnsent(for: bob, sentThrough: 1_000), "unknown backlog: query")
        l.queued(1, for: bob, newestSequence: 5)
        XCTAssertTrue(l.mayHaveUnsent(for: bob, sentThrough: 4))
        XCTAssertFalse(l.mayHaveUnsent(for: bob, sentThrough: 5))
        l.forgetAll()
        XCTAssertTrue(l.mayHaveUnsent(for: bob, sentThrough: 5))
    }

    func testCountsLoadLazilyAndFollowDeliveries() {
        var l = OutboxLedger()
        let bob = identity(2)
        XCTAssertTrue(l.needsCounts)
        l.loadCounts([bob: 3])
        XCTAssertFalse(l.needsCounts)
        l.queued(2, for: bob, newestSequence: 9)
        XCTAssertEqual(l.queuedCount(for: bob), 5)
        l.delivered(4, by: bob)
        XCTAssertEqual(l.queuedCount(for: bob), 1)
        XCTAssertEqual(l.queuedCount(for: identity(3)), 0)
    }
}
