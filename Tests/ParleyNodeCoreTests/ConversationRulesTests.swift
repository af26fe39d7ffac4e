import ParleyCore
import XCTest

@testable import ParleyNodeCore

/// Who may edit, delete and react, and which change wins (docs/PROTOCOL.md, "Conversation records").
final class ConversationRulesTests: XCTestCase {
    let me = IdentityKeyPair.generate().publicKey
    let bob = IdentityKeyPair.generate().publicKey
    let mallory = IdentityKeyPair.generate().publicKey
    let thumbs = try! Reaction("👍")  // a valid literal

    /// A direct message between us and `peer`, written by `author`.
    func target(
        by author: IdentityPublicKey, with peer: IdentityPublicKey, deleted: Bool = false,
        edited: Int64? = nil
    ) -> ActionTarget {
        ActionTarget(author: author, conversationPeer: peer, isDeleted: deleted, appliedChangeSequence: edited)
    }

    func testOnlyTheAuthorMayEditOrDelete() {
        for action: MessageActionRecord.Action in [.edit(body: "x"), .delete] {
            XCTAssertEqual(
                ConversationRules.judge(action, sequence: 5, from: bob, target: target(by: bob, with: bob)), .apply)
            // bob names our message to bob: not his to change.
            XCTAssertEqual(
                ConversationRules.judge(action, sequence: 5, from: bob, target: target(by: me, with: bob)),
                .refuse(.notAuthor))
            // mallory names bob's message (a conversation she is not part of): unknown to her.
            XCTAssertEqual(
                ConversationRules.judge(action, sequence: 5, from: mallory, target: target(by: bob, with: bob)),
                .refuse(.unknownTarget))
            XCTAssertEqual(
                ConversationRules.judge(action, sequence: 5, from: bob, target: nil), .refuse(.unknownTarget))
            // A room message is never the target of these records.
            let room = ActionTarget(author: bob, conversationPeer: nil, isDeleted: false, appliedChangeSequence: nil)
            XCTAssertEqual(
                ConversationRules.judge(action, sequence: 5, from: bob, target: room), .refuse(.unknownTarget))
        }
    }

    func testAnOlderEditArrivingLateIsStaleAndADeleteIsFinal() {
        XCTAssertEqual(
            ConversationRules.judge(
                .edit(body: "x"), sequence: 4, from: bob,
                target: target(by: bob, with: bob, edited: 7)), .stale)
        XCTAssertEqual(
            ConversationRules.judge(
                .edit(body: "x"), sequence: 7, from: bob,
                target: target(by: bob, with: bob, edited: 7)), .stale)
        XCTAssertEqual(
            ConversationRules.judge(
                .edit(body: "x"), sequence: 8, from: bob,
                target: target(by: bob, with: bob, edited: 7)), .apply)
        XCTAssertEqual(
            ConversationRules.judge(
                .edit(body: "x"), sequence: 9, from: bob,
                target: target(by: bob, with: bob, deleted: true)), .stale)
        XCTAssertEqual(
            ConversationRules.judge(
                .delete, sequence: 9, from: bob,
                target: target(by: bob, with: bob, deleted: true)), .stale)
    }

    func testReactionsOnEitherSidesMessagesBoundedPerReactor() {
        XCTAssertEqual(
            ConversationRules.judge(
                .reaction(thumbs, added: true), sequence: 1, from: bob,
                target: target(by: me, with: bob)), .apply)
        XCTAssertEqual(
            ConversationRules.judge(
                .reaction(thumbs, added: true), sequence: 1, from: bob,
                target: target(by: bob, with: bob)), .apply)
        XCTAssertEqual(
            ConversationRules.judge(
                .reaction(thumbs, added: true), sequence: 1, from: mallory,
                target: target(by: me, with: bob)), .refuse(.unknownTarget))
        let full = WireLimits.maxReactionsPerReactor
        XCTAssertEqual(
            ConversationRules.judge(
                .reaction(thumbs, added: true), sequence: 1, from: bob,
                target: target(by: me, with: bob), reactionsBySender: full),
            .refuse(.tooManyReactions))
        // One already there may be sent again, and withdrawing always works.
        XCTAssertEqual(
            ConversationRules.judge(
                .reaction(thumbs, added: true), sequence: 1, from: bob,
                target: target(by: me, with: bob), reactionsBySender: full,
                reactionIsNew: false), .apply)
        XCTAssertEqual(
            ConversationRules.judge(
                .reaction(thumbs, added: false), sequence: 1, from: bob,
                target: target(by: me, with: bob), reactionsBySender: full), .apply)
        XCTAssertEqual(
            ConversationRules.judge(
                .reaction(thumbs, added: true), sequence: 1, from: bob,
                target: target(by: me, with: bob, deleted: true)),
            .refuse(.targetDeleted))
    }

    func testRoomActionsNeedMembersAndTheRoomsOwnMessage() {
        let lab = RoomID.random()
        let other = RoomID.random()
        let inLab = ActionTarget(
            author: bob, conversationPeer: nil, isDeleted: false, appliedChangeSequence: nil, room: lab)
        XCTAssertEqual(
            ConversationRules.judge(
                .edit(body: "x"), sequence: 3, from: bob, room: lab, roomAccepts: true,
                target: inLab), .apply)
        XCTAssertEqual(
            ConversationRules.judge(
                .edit(body: "x"), sequence: 3, from: mallory, room: lab, roomAccepts: true,
                target: inLab), .refuse(.notAuthor))
        // Any member may react to any message of the room.
        XCTAssertEqual(
            ConversationRules.judge(
                .reaction(thumbs, added: true), sequence: 3, from: mallory, room: lab,
                roomAccepts: true, target: inLab), .apply)
        // Not a member (in our view): refused, whoever wrote the target.
        XCTAssertEqual(
            ConversationRules.judge(
                .delete, sequence: 3, from: bob, room: lab, roomAccepts: false,
                target: inLab), .refuse(.notRoomMember))
        // The named room must be the target's room; a direct action never reaches a room message.
        XCTAssertEqual(
            ConversationRules.judge(
                .delete, sequence: 3, from: bob, room: other, roomAccepts: true,
                target: inLab), .refuse(.unknownTarget))
        XCTAssertEqual(ConversationRules.judge(.delete, sequence: 3, from: bob, target: inLab), .refuse(.unknownTarget))
        XCTAssertEqual(
            ConversationRules.judge(
                .delete, sequence: 3, from: bob, room: lab, roomAccepts: true,
                target: target(by: bob, with: bob)), .refuse(.unknownTarget))
        XCTAssertEqual(
            ConversationRules.judgeLocal(.reaction(thumbs, added: true), me: me, target: inLab, amRoomMember: false),
            .notRoomMember)
        XCTAssertNil(
            ConversationRules.judgeLocal(.reaction(thumbs, added: true), me: me, target: inLab, amRoomMember: true))
    }

    func testLocalUserFollowsTheSameRules() {
        XCTAssertNil(ConversationRules.judgeLocal(.edit(body: "x"), me: me, target: target(by: me, with: bob)))
        XCTAssertEqual(ConversationRules.judgeLocal(.delete, me: me, target: target(by: bob, with: bob)), .notAuthor)
        XCTAssertEqual(
            ConversationRules.judgeLocal(.edit(body: "x"), me: me, target: target(by: me, with: bob, deleted: true)),
            .targetDeleted)
        XCTAssertNil(
            ConversationRules.judgeLocal(.reaction(thumbs, added: true), me: me, target: target(by: bob, with: bob)))
        XCTAssertEqual(
            ConversationRules.judgeLocal(
                .reaction(thumbs, added: true), me: me,
                target: target(by: bob, with: bob),
                reactionsByMe: WireLimits.maxReactionsPerReactor), .tooManyReactions)
        XCTAssertEqual(ConversationRules.judgeLocal(.delete, me: me, target: nil), .unknownTarget)
    }

    func testActionsAreAcknowledgedOnTheirOwnLane() {
        var w = SendWindow(limits: SendWindowLimits(maxCount: 4, maxBytes: 1_000, ackTimeout: .seconds(30)))
        let a = MessageID.random()
        let d = MessageID.random()
        XCTAssertTrue(w.admit(a, bytes: 3, lane: .messageAction, now: MonotonicInstant(nanoseconds: 0)))
        XCTAssertTrue(w.admit(d, bytes: 3, lane: .direct, sequence: 1, now: MonotonicInstant(nanoseconds: 0)))
        let ack = w.acknowledge([a, d])
        XCTAssertEqual(ack.actionItems, [a])
        XCTAssertEqual(ack.roomItems, [])
        XCTAssertEqual(ack.unknown, [])
        XCTAssertEqual(w.directSentThrough, 1)  // an action does not move the direct cursor
    }
}

final class StatusThrottleTests: XCTestCase {
    func testAtMostOneShownChangePerIntervalAndTheLastIsNeverLost() {
        var t = StatusThrottle<String>(minInterval: .seconds(1))
        let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)
        XCTAssertEqual(t.received(from: "bob", now: t0), .show)
        XCTAssertEqual(t.received(from: "bob", now: t0 + .milliseconds(100)), .holdUntil(t0 + .seconds(1)))
        XCTAssertEqual(
            t.received(from: "bob", now: t0 + .milliseconds(200)), .held, "the newer one replaces the held one")
        XCTAssertEqual(t.received(from: "carol", now: t0 + .milliseconds(200)), .show, "per peer")
        t.due("bob", now: t0 + .seconds(1))
        XCTAssertEqual(t.received(from: "bob", now: t0 + .milliseconds(1_500)), .holdUntil(t0 + .seconds(2)))
        t.forget("bob")
        XCTAssertEqual(t.received(from: "bob", now: t0 + .milliseconds(1_600)), .show, "offline forgets")
        XCTAssertEqual(t.received(from: "carol", now: t0 + .seconds(5)), .show)
    }
}

final class ErasurePurgeScheduleTests: XCTestCase {
    func testFirstDeleteAtOnceThenOnePurgePerInterval() {
        var s = ErasurePurgeSchedule(minInterval: .seconds(10))
        let t0 = MonotonicInstant(nanoseconds: 5_000_000_000)
        XCTAssertEqual(s.deleteApplied(now: t0), .purgeNow)
        XCTAssertFalse(s.isPending)
        XCTAssertEqual(s.deleteApplied(now: t0 + .seconds(1)), .purgeAt(t0 + .seconds(10)))
        XCTAssertTrue(s.isPending)
        XCTAssertEqual(s.deleteApplied(now: t0 + .seconds(2)), .alreadyScheduled)
        s.purged(now: t0 + .seconds(10))
        XCTAssertFalse(s.isPending)
        XCTAssertEqual(s.deleteApplied(now: t0 + .seconds(15)), .purgeAt(t0 + .seconds(20)))
        s.purged(now: t0 + .seconds(20))
        XCTAssertEqual(s.deleteApplied(now: t0 + .seconds(31)), .purgeNow)
    }
}
