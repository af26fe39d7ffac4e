import Foundation
import GRDB
import XCTest

@testable import ParleyStore

/// Replies, edits, deletes and reactions in the store, on a real SQLite file. The store
/// applies what the judge allows; the rules themselves are ConversationRulesTests'.
final class StoreConversationTests: XCTestCase {
    private var directory: String!
    private let me = String(repeating: "01", count: 32)
    private let bob = String(repeating: "b0", count: 32)
    private let carol = String(repeating: "c0", count: 32)

    override func setUpWithError() throws {
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("parley-conv-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o700])
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: directory) }

    private func id(_ n: Int) -> String { String(format: "%032x", n) }

    private func incoming(_ store: Store, _ n: Int, from sender: String, body: String, replyTo: String? = nil) throws
        -> StoredMessage
    {
        try store.storeIncoming(
            [
                IncomingMessage(
                    id: id(n), sender: sender, recipient: me, sequence: Int64(n),
                    createdAt: 1, body: body, replyTo: replyTo)
            ], at: 5)[0].message
    }

    private func action(
        _ n: Int, from author: String, seq: Int64, target: Int, _ kind: MessageActionKind,
        _ body: String? = nil
    ) -> IncomingAction {
        IncomingAction(
            id: id(n), author: author, sequence: seq, createdAt: 1, target: id(target), kind: kind, body: body)
    }

    func testRepliesKeepWhatTheyQuote() throws {
        let store = try Store(directory: directory)
        _ = try incoming(store, 1, from: bob, body: "question")
        let reply = try store.enqueue(
            [
                NewOutgoingMessage(
                    id: id(2), recipient: bob, body: "answer", createdAt: 2,
                    replyTo: id(1))
            ], sender: me)[0]
        XCTAssertEqual(reply.replyTo?.hex, id(1))
        XCTAssertEqual(try store.message(id: id(2), sender: me)?.replyTo?.hex, id(1))
        XCTAssertEqual(try incoming(store, 3, from: bob, body: "thanks", replyTo: id(2)).replyTo?.hex, id(2))
        XCTAssertEqual(try store.messages(idPrefix: id(3)).records.map(\.id.hex), [id(3)])
        XCTAssertEqual(try store.messages(idPrefix: "00000000").records.count, 2, "ambiguous prefixes return several")
        XCTAssertThrowsError(try store.messages(idPrefix: "0000"), "too short")
        XCTAssertThrowsError(try store.messages(idPrefix: "zzzzzzzz"), "not hex")
    }

    func testJudgeSeesTheConversationsMessageOnlyAndStoresRefusedOnesWithoutText() throws {
        let store = try Store(directory: directory)
        _ = try incoming(store, 1, from: bob, body: "bob's")
        var seen: [String: ActionTargetFacts?] = [:]
        let out = try store.receiveActions(
            [
                action(10, from: carol, seq: 1, target: 1, .edit, "carol's forgery"),
                action(11, from: bob, seq: 2, target: 1, .edit, "bob's, edited")
            ], me: me, at: 9
        ) { a, facts in
            seen[a.id.hex] = facts
            return a.author.hex == bob
        }
        XCTAssertNil(seen[id(10)]!, "carol is not part of the conversation: the target is not found for her")
        XCTAssertEqual(seen[id(11)]!?.message.id.hex, id(1))
        XCTAssertNil(out[0].updated)
        XCTAssertEqual(out[1].updated?.body, "bob's, edited")
        XCTAssertEqual(out[1].updated?.editedAt, 9)
        let kept = try store.read { db in
            try Row.fetchAll(db, sql: "SELECT author, body FROM message_action ORDER BY row_id")
        }
        XCTAssertEqual(kept.count, 2)
        XCTAssertTrue((kept[0]["body"] as Data?) == nil, "a refused action's text is not kept")
        // A resend is recognized and not judged again.
        var judged = 0
        let again = try store.receiveActions(
            [action(11, from: bob, seq: 2, target: 1, .edit, "bob's, edited")],
            me: me, at: 10
        ) { _, _ in
            judged += 1
            return true
        }
        XCTAssertEqual(judged, 0)
        XCTAssertFalse(again[0].isNew)
    }

    func testDeleteErasesBodyEditTextsAndReactions() throws {
        let store = try Store(directory: directory)
        _ = try incoming(store, 1, from: bob, body: "secret one")
        _ = try store.receiveActions(
            [
                action(10, from: bob, seq: 2, target: 1, .edit, "secret two"),
                action(11, from: bob, seq: 3, target: 1, .react, "👍")
            ], me: me, at: 9
        ) { _, _ in true }
        let target = try XCTUnwrap(try store.message(id: id(1), sender: bob))
        _ = try store.performLocalAction(
            NewLocalAction(
                id: id(20), peer: bob, target: target, kind: .react, body: "🎉",
                createdAt: 1), me: me, at: 9)
        XCTAssertEqual(
            try store.reactions(onRows: [target.rowID])[target.rowID]?.map(\.reaction).sorted(), ["👍", "🎉"].sorted())
        _ = try store.receiveActions([action(12, from: bob, seq: 4, target: 1, .delete)], me: me, at: 11) { _, _ in true
        }
        let deleted = try XCTUnwrap(try store.message(id: id(1), sender: bob))
        XCTAssertEqual(deleted.body, "")
        XCTAssertEqual(deleted.deletedAt, 11)
        XCTAssertEqual(try store.actionBodies(target: id(1), targetAuthor: bob), [])
        XCTAssertNil(try store.reactions(onRows: [target.rowID])[target.rowID])
        let raw = try store.read { db in try Data.fetchAll(db, sql: "SELECT body FROM message_body") }
        XCTAssertFalse(raw.contains { String(decoding: $0, as: UTF8.self).contains("secret") })
    }

    func testLaterReactionChangeWinsOverAnOlderOneArrivingLate() throws {
        let store = try Store(directory: directory)
        let m = try incoming(store, 1, from: bob, body: "x")
        _ = try store.receiveActions(
            [
                action(10, from: bob, seq: 5, target: 1, .unreact, "👍"),
                action(11, from: bob, seq: 4, target: 1, .react, "👍")  // older, resent late
            ], me: me, at: 9
        ) { _, _ in true }
        XCTAssertNil(try store.reactions(onRows: [m.rowID])[m.rowID])
        _ = try store.receiveActions([action(12, from: bob, seq: 6, target: 1, .react, "👍")], me: me, at: 9) { _, _ in
            true
        }
        XCTAssertEqual(
            try store.reactions(onRows: [m.rowID])[m.rowID],
            [StoredReaction(reactor: StoredKeyFixture.key(bob), reaction: "👍", sequence: 6)])
    }

    func testOurActionsWaitForTheirTargetsDeliveryAndLeaveOnAck() throws {
        let store = try Store(directory: directory)
        let sent = try store.enqueue(
            [NewOutgoingMessage(id: id(1), recipient: bob, body: "typo", createdAt: 1)], sender: me)[0]
        let edited = try store.performLocalAction(
            NewLocalAction(
                id: id(2), peer: bob, target: sent, kind: .edit,
                body: "fixed", createdAt: 2), me: me, at: 3)
        XCTAssertEqual(edited.body, "fixed")
        XCTAssertEqual(edited.editedAt, 3)
        XCTAssertEqual(try store.pendingActions(to: bob, limit: 10), [], "the message itself is not delivered yet")
        XCTAssertTrue(try store.hasQueuedActions())
        XCTAssertEqual(try store.queuedActionCount(to: bob), 1)
        XCTAssertEqual(try store.queuedActionCount(to: carol), 0)
        _ = try store.markDelivered(ids: [id(1)], by: bob, at: 4)
        let pending = try store.pendingActions(to: bob, limit: 10)
        XCTAssertEqual(pending.map(\.id.hex), [id(2)])
        XCTAssertEqual(pending.first?.body, "fixed")
        XCTAssertEqual(pending.first?.target.hex, id(1))
        XCTAssertEqual(try store.markActionsDelivered(ids: [id(2)], by: carol), 0, "only the peer it went to")
        XCTAssertEqual(try store.markActionsDelivered(ids: [id(2)], by: bob), 1)
        XCTAssertEqual(try store.pendingActions(to: bob, limit: 10), [])
        XCTAssertFalse(try store.hasQueuedActions())
    }

    func testDeletingOurMessageDropsOurQueuedEditsOfIt() throws {
        let store = try Store(directory: directory)
        let sent = try store.enqueue(
            [NewOutgoingMessage(id: id(1), recipient: bob, body: "a", createdAt: 1)], sender: me)[0]
        _ = try store.performLocalAction(
            NewLocalAction(
                id: id(2), peer: bob, target: sent, kind: .edit, body: "b",
                createdAt: 2), me: me, at: 3)
        _ = try store.performLocalAction(
            NewLocalAction(
                id: id(3), peer: bob, target: sent, kind: .delete, body: nil,
                createdAt: 2), me: me, at: 4)
        _ = try store.markDelivered(ids: [id(1)], by: bob, at: 5)
        XCTAssertEqual(try store.pendingActions(to: bob, limit: 10).map(\.kind), [.delete])
    }

    func testRoomActionsFanOutAndWaitForEachMembersDelivery() throws {
        let store = try Store(directory: directory)
        let room = String(repeating: "ab", count: 16)
        let sent = try store.enqueueRoomMessage(
            id: id(1), room: room, body: "hello room", createdAt: 1, sender: me,
            members: [bob, carol])
        let edited = try store.performLocalAction(
            NewLocalAction(
                id: id(2), peer: room, target: sent, kind: .edit,
                body: "hello lab", createdAt: 2, members: [bob, carol]),
            me: me, at: 3)
        XCTAssertEqual(edited.body, "hello lab")
        XCTAssertEqual(try store.pendingActions(to: bob, limit: 10), [], "the message has not reached bob yet")
        _ = try store.acknowledgeRoomTraffic(ids: [id(1)], by: bob, at: 4)
        let forBob = try store.pendingActions(to: bob, limit: 10)
        XCTAssertEqual(forBob.map(\.id.hex), [id(2)])
        XCTAssertEqual(forBob.first?.room?.hex, room)
        XCTAssertEqual(try store.pendingActions(to: carol, limit: 10), [], "carol has not acknowledged the message")
        XCTAssertEqual(try store.markActionsDelivered(ids: [id(2)], by: bob), 1)
        XCTAssertEqual(try store.pendingActions(to: bob, limit: 10), [])
        XCTAssertTrue(try store.hasQueuedActions(), "carol still waits for it")
        _ = try store.acknowledgeRoomTraffic(ids: [id(1)], by: carol, at: 5)
        XCTAssertEqual(try store.pendingActions(to: carol, limit: 10).map(\.id.hex), [id(2)])
        XCTAssertEqual(try store.markActionsDelivered(ids: [id(2)], by: carol), 1)
        XCTAssertFalse(try store.hasQueuedActions())
    }

    func testIncomingRoomActionFindsTheTargetInItsRoomOnly() throws {
        let store = try Store(directory: directory)
        let room = String(repeating: "ab", count: 16)
        let elsewhere = String(repeating: "cd", count: 16)
        _ = try store.storeIncomingRoomMessages(
            [
                IncomingMessage(
                    id: id(1), sender: bob, recipient: me, sequence: 1,
                    createdAt: 1, body: "in the room")
            ], room: room, at: 2)
        var facts: [String: ActionTargetFacts?] = [:]
        _ = try store.receiveActions(
            [
                IncomingAction(
                    id: id(10), author: carol, sequence: 1, createdAt: 1, target: id(1), kind: .react, body: "👍",
                    room: room),
                IncomingAction(
                    id: id(11), author: carol, sequence: 2, createdAt: 1, target: id(1), kind: .react, body: "👍",
                    room: elsewhere),
                IncomingAction(
                    id: id(12), author: bob, sequence: 3, createdAt: 1, target: id(1), kind: .edit, body: "x")
            ], me: me, at: 3
        ) { a, f in
            facts[a.id.hex] = f
            return f != nil
        }
        XCTAssertEqual(facts[id(10)]!?.message.body, "in the room")
        XCTAssertNil(facts[id(11)]!, "another room")
        XCTAssertNil(facts[id(12)]!, "a direct action never names a room message")
    }
}
