import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import ParleyConfiguration
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// Room sync's driver on a virtual-time loop with a real store (SQLite in a temporary
/// directory) and a host that stands in for the node: who may hand over a signed room
/// message (a joined member, never a removed one or a stranger), which messages are
/// anyone's (the author a member at the message's place), forged signatures (logged once
/// per peer per minute, the session closed after a stream of them), changes that wait for
/// their target, the bounded fan-out of this node's own messages, and acknowledgements of
/// pushed messages.
final class RoomSyncDriverTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var directory: String!
    var store: Store!
    var host: SyncHost!
    var lines: LockedLines!
    /// The attack log's clock (a `ContinuousClock.Instant` moved by hand).
    var attackNow: AttackLogClock!

    let me = IdentityKeyPair.generate()
    let alice = IdentityKeyPair.generate()
    let bob = IdentityKeyPair.generate()
    let eve = IdentityKeyPair.generate()
    let dave = IdentityKeyPair.generate()

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        directory = try makeTestDirectory("parley-roomsync")
        store = try Store(directory: directory)
        host = SyncHost()
        lines = LockedLines()
        attackNow = AttackLogClock()
    }

    override func tearDownWithError() throws {
        host = nil
        store = nil
        _ = try? loop.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The host judges by a real quota that allows a stranger `messages` rows (1 MiB).
    private func allowStrangers(messages: Int) {
        var limits = ReceiveQuota.standard
        limits.stranger = ReceiveQuota.Allowance(messages: messages, bytes: 1 << 20)
        host.quota = ReceiveQuotaDriver(
            store: store, directory: PeerDirectory(store: store, myName: "me"), limits: limits, clock: clock,
            log: testLogger())
    }

    private func driver() -> RoomSyncDriver<SyncHost> {
        let lines = self.lines!
        let logger = Logger(label: "roomsync-test") { _ in
            ParleyLogHandler(
                format: .human, level: SharedLogLevel(.warning), output: LogOutput(sink: { lines.append($0) }))
        }
        let now = attackNow!
        let d = RoomSyncDriver<SyncHost>(
            store: store, identity: me, clock: clock, log: testLogger(),
            attackLog: RateLimitedLog(logger: logger, level: .warning, interval: .seconds(60), now: { now.now }))
        d.host = host
        return d
    }

    // MARK: A room

    private func change(_ c: RoomOperation.Change, by who: IdentityKeyPair, after ops: [RoomOperation]) throws
        -> RoomOperation
    {
        try RoomOperation.change(c, roomID: ops[0].roomID, after: resolve(ops).heads, by: who, createdAt: 2)
    }

    private func resolve(_ ops: [RoomOperation]) -> RoomState { RoomResolver.resolve(root: ops[0], operations: ops)! }

    /// #lab: alice creates it with me, bob and eve; all join; alice removes eve. The host
    /// and the store know it as this node would.
    private func lab(extra: [IdentityKeyPair] = []) throws -> RoomState {
        let invited = [me, bob, eve] + extra
        var ops = [
            try RoomOperation.create(name: "lab", members: invited.map(\.publicKey), by: alice, createdAt: 1)
        ]
        for m in invited { ops.append(try change(.join, by: m, after: ops)) }
        ops.append(try change(.remove(eve.publicKey), by: alice, after: ops))
        let state = resolve(ops)
        host.rooms[state.roomID] = (state, Dictionary(uniqueKeysWithValues: ops.map { ($0.hash, $0) }))
        try store.saveRoom(
            RoomRecord(
                id: state.roomID, root: state.root, name: state.name, creator: state.creator,
                createdAt: Int64(state.createdAt), version: Int64(state.version), members: state.members,
                status: .joined, roles: state.roles, joined: state.joined, updatedAt: clock.wallMilliseconds()))
        XCTAssertTrue(state.hasJoined(me.publicKey) && state.hasJoined(bob.publicKey))
        XCTAssertFalse(state.hasJoined(eve.publicKey), "eve was removed")
        return state
    }

    private func signed(
        _ body: String, by author: IdentityKeyPair, sequence: UInt64, in state: RoomState, id: MessageID = .random()
    ) throws -> SignedRoomMessage {
        try SignedRoomMessage.sign(
            roomID: state.roomID, roomSequence: sequence, id: id, createdAt: UInt64(clock.wallMilliseconds()),
            anchor: state.heads.map(\.hash), body: body, by: author)
    }

    private func shownBodies(_ state: RoomState) throws -> [String] {
        try store.roomMessages(room: state.roomID, after: nil, limit: 50).map(\.body)
    }

    // MARK: Who hands over what

    /// A joined member passes alice's message on: stored, shown, acknowledged, counted
    /// against alice's quota. The same message handed over by eve (removed) or dave
    /// (never a member) is neither stored nor acknowledged: only a current member passes
    /// messages on.
    func testOnlyAJoinedMemberPassesSignedMessagesOn() throws {
        let state = try lab()
        let sync = driver()
        let m = try signed("hello", by: alice, sequence: 1, in: state)
        for stranger in [eve, dave] {
            let link = host.connect(stranger.publicKey)
            let out = try sync.receivedSignedMessages([.verified(m)], from: stranger.publicKey, on: link)
            XCTAssertEqual(out.acks, [], "not acknowledged: the author or a member sends it again")
            XCTAssertEqual(out.shown.count, 0)
        }
        XCTAssertEqual(try shownBodies(state), [], "nothing a non-member handed over is shown")
        XCTAssertEqual(try store.signedRoomMessage(id: m.id, author: alice.publicKey), nil)

        let link = host.connect(bob.publicKey)
        let out = try sync.receivedSignedMessages([.verified(m)], from: bob.publicKey, on: link)
        XCTAssertEqual(out.acks, [m.id])
        XCTAssertEqual(out.shown.map(\.body), ["hello"])
        XCTAssertEqual(out.shown.first?.sender, alice.publicKey, "shown as the author's, not the forwarder's")
        XCTAssertEqual(try shownBodies(state), ["hello"])
        XCTAssertEqual(host.quotaStored, [alice.publicKey], "it counts against its author's quota")
        XCTAssertNotNil(try store.signedRoomMessage(id: m.id, author: alice.publicKey), "kept signed for sync")
    }

    /// A message whose author is not a member at its place (eve after her removal, dave
    /// never) is nobody's: acknowledged (final), never stored, even from a joined member.
    func testAMessageByARemovedMemberOrAStrangerIsNobodys() throws {
        let state = try lab()
        let sync = driver()
        let link = host.connect(bob.publicKey)
        let fromEve = try signed("still here", by: eve, sequence: 7, in: state)
        let fromDave = try signed("hi all", by: dave, sequence: 1, in: state)
        let out = try sync.receivedSignedMessages(
            [.verified(fromEve), .verified(fromDave)], from: bob.publicKey, on: link)
        XCTAssertEqual(out.acks, [fromEve.id, fromDave.id], "final: never to be stored")
        XCTAssertEqual(out.shown.count, 0)
        XCTAssertEqual(try shownBodies(state), [])
        XCTAssertEqual(try store.signedRoomMessage(id: fromEve.id, author: eve.publicKey), nil)
        XCTAssertEqual(host.quotaStored, [])
    }

    /// Forged signatures (as `SignedRoomMessage` decoding reports them): nothing stored or
    /// acknowledged, one attack-log line per peer per minute however many arrive, and the
    /// session closed after `maxBadMessagesPerSession`.
    func testForgedMessagesAreLoggedOncePerMinuteAndCloseTheSession() throws {
        let state = try lab()
        let sync = driver()
        let link = host.connect(bob.publicKey)
        sync.sessionStarted(link, peer: bob.publicKey)
        let forged = (1...RoomSyncLimits.maxBadMessagesPerSession).map { _ in
            RoomMessageArrival.badSignature(roomID: state.roomID, author: alice.publicKey, id: .random())
        }
        let out = try sync.receivedSignedMessages(Array(forged.dropLast()), from: bob.publicKey, on: link)
        XCTAssertEqual(out.acks, [])
        XCTAssertNil(link.closed, "a few bad ones do not close the session")
        XCTAssertEqual(lines.matching("signature is not its author's").count, 1, "one line, not fifteen")
        _ = try sync.receivedSignedMessages([forged.last!], from: bob.publicKey, on: link)
        XCTAssertNotNil(link.closed, "a stream of forged messages closes the session")
        XCTAssertEqual(lines.matching("signature is not its author's").count, 1)
        attackNow.advance(by: .seconds(61))
        _ = try sync.receivedSignedMessages([forged[0]], from: bob.publicKey, on: link)
        XCTAssertEqual(lines.matching("signature is not its author's").count, 2, "a minute later: logged again")
        XCTAssertEqual(try shownBodies(state), [])
    }

    /// A joined member signs messages naming operations nobody holds, and changes naming
    /// messages nobody holds, one per read: none is stored or acknowledged, and this node's
    /// log notes each kind once per member per interval, not once per message (the log is
    /// not a member's to fill).
    func testMessagesAndChangesNamingWhatIsNotHeldAreLoggedOncePerInterval() throws {
        let state = try lab()
        let notes = LockedLines()
        let logger = Logger(label: "roomsync-notes") { _ in
            ParleyLogHandler(
                format: .human, level: SharedLogLevel(.info), output: LogOutput(sink: { notes.append($0) }))
        }
        let sync = RoomSyncDriver<SyncHost>(
            store: store, identity: me, clock: clock, log: logger,
            attackLog: RateLimitedLog(logger: logger, level: .warning, interval: .seconds(60)))
        sync.host = host
        let link = host.connect(bob.publicKey)
        let madeUp = [RoomOperationHash(exactly: (0..<32).map { _ in UInt8.random(in: 0...255) })]
        for i in 1...100 {
            let m = try SignedRoomMessage.sign(
                roomID: state.roomID, roomSequence: UInt64(i), id: .random(),
                createdAt: UInt64(clock.wallMilliseconds()),
                anchor: madeUp, body: "x", by: bob)
            let change = try SignedRoomMessage.signChange(
                .edit(body: "y"), of: .random(), roomID: state.roomID, roomSequence: UInt64(1000 + i), id: .random(),
                createdAt: UInt64(clock.wallMilliseconds()), anchor: state.heads.map(\.hash), by: bob)
            let out = try sync.receivedSignedMessages([.verified(m), .verified(change)], from: bob.publicKey, on: link)
            XCTAssertEqual(out.acks, [])
        }
        XCTAssertEqual(try shownBodies(state), [])
        XCTAssertEqual(notes.matching("names operations not held yet").count, 1)
        XCTAssertEqual(notes.matching("names a message not held yet").count, 1)
    }

    // MARK: Changes

    /// alice's edit of her message arrives before the message: held (not applied, not
    /// acknowledged); when the message arrives the edit is applied and acknowledged to the
    /// member that handed it over.
    func testAChangeWaitingForItsTargetIsAppliedWhenTheTargetArrives() throws {
        let state = try lab()
        let sync = driver()
        let link = host.connect(bob.publicKey)
        let m = try signed("helo", by: alice, sequence: 1, in: state)
        let edit = try SignedRoomMessage.signChange(
            .edit(body: "hello"), of: m.id, roomID: state.roomID, roomSequence: 2, id: .random(),
            createdAt: UInt64(clock.wallMilliseconds()), anchor: state.heads.map(\.hash), by: alice)
        let early = try sync.receivedSignedMessages([.verified(edit)], from: bob.publicKey, on: link)
        XCTAssertEqual(early.acks, [], "its target is not held: not acknowledged")
        XCTAssertEqual(sync.book.waitingChanges.count, 1)
        XCTAssertEqual(host.updated, [])

        let out = try sync.receivedSignedMessages([.verified(m)], from: bob.publicKey, on: link)
        XCTAssertEqual(out.acks, [m.id])
        XCTAssertEqual(host.updated.map(\.body), ["hello"], "the waiting edit is applied")
        XCTAssertEqual(try shownBodies(state), ["hello"])
        XCTAssertEqual(link.acks.flatMap { $0 }, [edit.id], "and acknowledged to bob")
        XCTAssertEqual(sync.book.waitingChanges.count, 0)
    }

    /// An edit of alice's message signed by bob (only the author edits) is refused; kept
    /// signed, acknowledged (final), not applied.
    func testAnEditByAnotherMemberThanTheAuthorIsRefused() throws {
        let state = try lab()
        let sync = driver()
        let link = host.connect(bob.publicKey)
        let m = try signed("mine", by: alice, sequence: 1, in: state)
        _ = try sync.receivedSignedMessages([.verified(m)], from: bob.publicKey, on: link)
        let edit = try SignedRoomMessage.signChange(
            .edit(body: "bob's now"), of: m.id, roomID: state.roomID, roomSequence: 1, id: .random(),
            createdAt: UInt64(clock.wallMilliseconds()), anchor: state.heads.map(\.hash), by: bob)
        let out = try sync.receivedSignedMessages([.verified(edit)], from: bob.publicKey, on: link)
        XCTAssertEqual(out.acks, [edit.id])
        XCTAssertEqual(host.updated, [])
        XCTAssertEqual(try shownBodies(state), ["mine"])
        XCTAssertEqual(lines.matching("signed room change refused").count, 1)
    }

    /// A former contact the person blocked, still a member of a room, reaches this node
    /// only through other members: its messages and changes passed on by bob are
    /// acknowledged (final while the block lasts) and dropped: not stored, not shown, not
    /// counted, not kept signed for sync. A replaced key's are its history: taken. After
    /// an unblock, the same message handed over again is taken.
    func testABlockedAuthorsMessagesAndChangesPassedOnByAMemberAreDropped() throws {
        let state = try lab()
        let sync = driver()
        let link = host.connect(bob.publicKey)
        let mine = try signed("bob's", by: bob, sequence: 1, in: state)
        _ = try sync.receivedSignedMessages([.verified(mine)], from: bob.publicKey, on: link)
        host.quotaStored = []
        host.standings[alice.publicKey] = .blocked
        let m = try signed("let me back in", by: alice, sequence: 1, in: state)
        let reaction = try SignedRoomMessage.signChange(
            .reaction(try Reaction("👍"), added: true), of: mine.id, roomID: state.roomID, roomSequence: 2,
            id: .random(), createdAt: UInt64(clock.wallMilliseconds()), anchor: state.heads.map(\.hash), by: alice)
        let out = try sync.receivedSignedMessages([.verified(m), .verified(reaction)], from: bob.publicKey, on: link)
        XCTAssertEqual(out.acks, [m.id, reaction.id], "final while the block lasts")
        XCTAssertEqual(out.shown.count, 0)
        XCTAssertEqual(try shownBodies(state), ["bob's"], "nothing from the blocked key is shown")
        XCTAssertEqual(try store.signedRoomMessage(id: m.id, author: alice.publicKey), nil)
        XCTAssertEqual(try store.signedRoomMessage(id: reaction.id, author: alice.publicKey), nil)
        XCTAssertEqual(host.updated, [], "the reaction is not applied")
        XCTAssertEqual(host.quotaStored, [])

        host.standings[alice.publicKey] = .replaced
        let old = try signed("from my old key", by: alice, sequence: 3, in: state)
        XCTAssertEqual(
            try sync.receivedSignedMessages([.verified(old)], from: bob.publicKey, on: link).shown.map(\.body),
            ["from my old key"], "a replaced key's messages are its history")

        host.standings[alice.publicKey] = nil
        let again = try sync.receivedSignedMessages([.verified(m)], from: bob.publicKey, on: link)
        XCTAssertEqual(again.shown.map(\.body), ["let me back in"], "after the unblock it is taken")
    }

    /// Signed changes count against their **author's** receive quota, whoever hands them
    /// over: alice (a stranger here, allowed 4 rows) has her message and three reactions
    /// taken; her further reactions and edits, passed on by bob, are answered to bob with
    /// `refused` (peerQuota): not applied, not stored (nor kept signed, so never passed
    /// on), not acknowledged; the store's rows from her stop growing. A resend of a change
    /// already taken is acknowledged, never refused.
    func testSignedChangesOverTheAuthorsQuotaAreRefused() throws {
        let state = try lab()
        allowStrangers(messages: 4)
        let sync = driver()
        let link = host.connect(bob.publicKey)
        let m = try signed("hello", by: alice, sequence: 1, in: state)
        _ = try sync.receivedSignedMessages([.verified(m)], from: bob.publicKey, on: link)
        func change(_ action: MessageActionRecord.Action, _ sequence: UInt64) throws -> SignedRoomMessage {
            try SignedRoomMessage.signChange(
                action, of: m.id, roomID: state.roomID, roomSequence: sequence, id: .random(),
                createdAt: UInt64(clock.wallMilliseconds()), anchor: state.heads.map(\.hash), by: alice)
        }
        let thumbs = try Reaction("👍")
        var taken: [SignedRoomMessage] = []
        for n in 2...4 { taken.append(try change(.reaction(thumbs, added: n % 2 == 0), UInt64(n))) }
        let first = try sync.receivedSignedMessages(taken.map { .verified($0) }, from: bob.publicKey, on: link)
        XCTAssertEqual(first.acks, taken.map(\.id), "a small stream is taken")
        XCTAssertTrue(link.refused.isEmpty)
        XCTAssertEqual(try store.incomingActionRows(from: alice.publicKey), 3)

        var flood: [SignedRoomMessage] = []
        for n in 5...24 {
            let action: MessageActionRecord.Action =
                n % 3 == 0 ? .edit(body: "edit \(n)") : .reaction(thumbs, added: n % 2 == 0)
            flood.append(try change(action, UInt64(n)))
        }
        let over = try sync.receivedSignedMessages(flood.map { .verified($0) }, from: bob.publicKey, on: link)
        XCTAssertEqual(over.acks, [], "nothing over the quota is acknowledged")
        XCTAssertEqual(link.refused.map(\.0), [.peerQuota])
        XCTAssertEqual(link.refused.flatMap(\.1), flood.map(\.id), "refused to the member that handed them over")
        XCTAssertEqual(try store.incomingActionRows(from: alice.publicKey), 3, "the store's rows stopped growing")
        XCTAssertNil(
            try store.signedRoomMessage(id: flood[0].id, author: alice.publicKey), "not kept signed: not passed on")
        XCTAssertEqual(try shownBodies(state), ["hello"], "no refused edit applied")
        XCTAssertNil(link.closed)

        let again = try sync.receivedSignedMessages([.verified(taken[0])], from: bob.publicKey, on: link)
        XCTAssertEqual(again.acks, [taken[0].id], "a resend of one taken is acknowledged")
        XCTAssertEqual(link.refused.count, 1)
    }

    /// Handed over by a member whose version cannot keep refused changes queued (no
    /// features bit 6): over the author's quota they are acknowledged and dropped (never
    /// stored, kept signed or applied), so that member does not resend them at once.
    func testSignedChangesOverTheQuotaFromAnOlderMemberAreDropped() throws {
        let state = try lab()
        allowStrangers(messages: 1)
        let sync = driver()
        let link = host.connect(bob.publicKey)
        link.remoteFeatures = [.conversation, .roomSync]
        let m = try signed("hello", by: alice, sequence: 1, in: state)
        _ = try sync.receivedSignedMessages([.verified(m)], from: bob.publicKey, on: link)
        let edit = try SignedRoomMessage.signChange(
            .edit(body: "rewritten"), of: m.id, roomID: state.roomID, roomSequence: 2, id: .random(),
            createdAt: UInt64(clock.wallMilliseconds()), anchor: state.heads.map(\.hash), by: alice)
        let out = try sync.receivedSignedMessages([.verified(edit)], from: bob.publicKey, on: link)
        XCTAssertEqual(out.acks, [edit.id], "acknowledged: an older member would resend a refusal at once")
        XCTAssertTrue(link.refused.isEmpty)
        XCTAssertEqual(try store.incomingActionRows(from: alice.publicKey), 0)
        XCTAssertNil(try store.signedRoomMessage(id: edit.id, author: alice.publicKey))
        XCTAssertEqual(try shownBodies(state), ["hello"])
    }

    // MARK: This node's messages

    /// This node sends its own room message itself to every member not known to sync and
    /// to only `RoomFanOut.directRecipients` of those that do.
    func testTheFanOutOfOwnMessagesIsBounded() throws {
        let many = (0..<20).map { _ in IdentityKeyPair.generate() }
        let state = try lab(extra: many)
        let sync = driver()
        let everyone = Set(state.joined).subtracting([me.publicKey])
        XCTAssertEqual(Set(sync.messageRecipients(state)), everyone, "nobody known to sync: all of them")
        for m in many { sync.notePeer(m.publicKey, .messages, syncing: true) }
        let recipients = sync.messageRecipients(state)
        XCTAssertEqual(recipients.count, RoomFanOut.directRecipients + 2, "bob and alice, and a few of the 20")
        XCTAssertTrue(recipients.contains(bob.publicKey) && recipients.contains(alice.publicKey))
        XCTAssertFalse(recipients.contains(eve.publicKey), "never a removed member")
        // Online ones first: the eight with a session that syncs are the eight chosen.
        let online = Set(many.suffix(RoomFanOut.directRecipients).map(\.publicKey))
        for m in online { _ = host.connect(m) }
        XCTAssertEqual(
            Set(sync.messageRecipients(state)), online.union([bob.publicKey, alice.publicKey]),
            "members online now are chosen first")
    }

    /// Messages pushed to a member are remembered until its acknowledgement; the
    /// acknowledgement removes the entry and frees the push window.
    func testAnAcknowledgementRemovesThePushedEntry() throws {
        let state = try lab()
        let sync = driver()
        let messages = try (1...2).map { try signed("m\($0)", by: alice, sequence: $0, in: state) }
        let carolLike = host.connect(alice.publicKey)
        _ = try sync.receivedSignedMessages(messages.map { .verified($0) }, from: alice.publicKey, on: carolLike)
        let link = host.connect(bob.publicKey)
        sync.sessionStarted(link, peer: bob.publicKey)
        sync.receivedHave(RoomHave(roomID: state.roomID, holding: [:]), from: bob.publicKey)
        XCTAssertEqual(link.pushed.map(\.id), messages.map(\.id), "bob lacks both: pushed, oldest first")
        XCTAssertEqual(sync.book.pushed[bob.publicKey]?.count, 2)
        XCTAssertEqual(sync.book.machine.inFlight(to: bob.publicKey, room: state.roomID), 2)

        sync.acknowledged([messages[0].id], by: bob.publicKey)
        XCTAssertEqual(sync.book.pushed[bob.publicKey].map { Set($0.keys) }, [messages[1].id])
        XCTAssertEqual(sync.book.machine.inFlight(to: bob.publicKey, room: state.roomID), 1)
        sync.acknowledged([messages[0].id], by: bob.publicKey)  // again: nothing changes
        XCTAssertEqual(sync.book.machine.inFlight(to: bob.publicKey, room: state.roomID), 1)

        sync.sessionEnded(bob.publicKey)
        XCTAssertNil(sync.book.pushed[bob.publicKey], "dropped with the session")
    }

    /// A member removed during a session hears of nothing more on it: no summary, no
    /// relay, no push, though it had everything pushed while it was in.
    func testAMemberRemovedDuringTheSessionGetsNothingMore() throws {
        let state = try lab(extra: [dave])
        let sync = driver()
        let aliceLink = host.connect(alice.publicKey)
        let first = try signed("before", by: alice, sequence: 1, in: state)
        _ = try sync.receivedSignedMessages([.verified(first)], from: alice.publicKey, on: aliceLink)
        let link = host.connect(dave.publicKey)
        sync.sessionStarted(link, peer: dave.publicKey)
        sync.receivedHave(RoomHave(roomID: state.roomID, holding: [:]), from: dave.publicKey)
        XCTAssertEqual(link.pushed.map(\.id), [first.id], "while dave is in, he gets what he lacks")
        let summaries = link.haves.count

        // alice removes dave.
        var ops = Array(host.rooms[state.roomID]!.operations.values)
        ops.append(
            try RoomOperation.change(
                .remove(dave.publicKey), roomID: state.roomID, after: state.heads, by: alice, createdAt: 3))
        let after = RoomResolver.resolve(root: ops.first { $0.hash == state.root }!, operations: ops)!
        XCTAssertFalse(after.hasJoined(dave.publicKey))
        host.rooms[state.roomID] = (after, Dictionary(uniqueKeysWithValues: ops.map { ($0.hash, $0) }))
        sync.membershipChanged(after)

        let second = try signed("after", by: alice, sequence: 2, in: after)
        _ = try sync.receivedSignedMessages([.verified(second)], from: alice.publicKey, on: aliceLink)
        loop.advanceTime(by: .seconds(Int64(RoomSyncLimits.antiEntropyInterval.components.seconds) + 1))
        sync.tick()
        sync.receivedHave(RoomHave(roomID: state.roomID, holding: [:]), from: dave.publicKey)
        XCTAssertEqual(link.haves.count, summaries, "no summary of the room to a removed member")
        XCTAssertEqual(link.pushed.map(\.id), [first.id], "nothing pushed to a removed member")
    }
}

// MARK: Stand-ins

/// One session's connection that records what the driver gives it.
final class SyncLink: MessageLink {
    let peer: IdentityPublicKey
    var isWritable = true
    var remoteFeatures: ProtocolFeatures = .supported
    var remoteIdentityKey: IdentityPublicKey? { peer }
    private(set) var acks: [[MessageID]] = []
    private(set) var pushed: [SignedRoomMessage] = []
    private(set) var haves: [RoomHave] = []
    private(set) var refused: [(RefusalReason, [MessageID])] = []
    private(set) var closed: String?

    init(peer: IdentityPublicKey) { self.peer = peer }

    func send(_ record: AppRecord) {
        switch record {
        case .ack(let ids): acks.append(ids)
        case .roomMessage(.verified(let m)): pushed.append(m)
        case .roomHave(let h): haves.append(h)
        case let .refused(reason, ids): refused.append((reason, ids))
        default: break
        }
    }

    func close(reason: CloseReason, text: String) { closed = text }
}

/// Stands in for the node: sessions, the rooms as resolved, a receive quota that takes
/// everything, the conversation rules, and the events.
final class SyncHost: RoomSyncHost {
    typealias Link = SyncLink
    var links: [IdentityPublicKey: SyncLink] = [:]
    var rooms: [RoomID: (state: RoomState?, operations: [RoomOperationHash: RoomOperation])] = [:]
    var quotaStored: [IdentityPublicKey] = []
    /// What the person decided about authors' keys (none: never pinned).
    var standings: [IdentityPublicKey: KnownPeer.Standing] = [:]
    var updated: [StoredMessage] = []
    var deletes = 0

    func connect(_ peer: IdentityPublicKey) -> SyncLink {
        let link = SyncLink(peer: peer)
        links[peer] = link
        return link
    }

    func activePeer(of link: SyncLink) -> IdentityPublicKey? { links[link.peer] === link ? link.peer : nil }
    func activeConnection(for peer: IdentityPublicKey) -> SyncLink? { links[peer] }
    func pump(_ link: SyncLink) {}
    func roomForSync(_ room: RoomID) throws(StoreError)
        -> (state: RoomState?, operations: [RoomOperationHash: RoomOperation])
    {
        rooms[room] ?? (nil, [:])
    }
    func judgeByQuota(_ chats: [RoomChatRecord], from author: IdentityPublicKey) throws(StoreError)
        -> (store: [RoomChatRecord], refused: [(RefusalReason, [MessageID])])
    {
        (chats, [])
    }
    /// The receive quota for signed changes (a real driver over the test's store); nil
    /// takes everything.
    var quota: ReceiveQuotaDriver?
    func judgeActionsByQuota(_ actions: [(id: MessageID, size: Int)], from author: IdentityPublicKey)
        throws(StoreError) -> [(RefusalReason, [MessageID])]
    {
        try quota?.judge(actions, from: author).refused ?? []
    }
    func sendRefusals(_ refused: [(RefusalReason, [MessageID])], on link: SyncLink) {
        for (reason, ids) in refused { link.send(.refused(reason, ids)) }
    }
    func quotaStored(_ bodies: [Int], from sender: IdentityPublicKey) {
        quotaStored.append(sender)
        quota?.stored(bodies, from: sender)
    }
    func judgeChange(
        _ action: MessageActionRecord.Action, sequence: Int64, from author: IdentityPublicKey, room: RoomID?,
        roomAccepts: Bool, facts: ActionTargetFacts?
    ) -> ActionVerdict {
        ConversationRules.judge(
            action, sequence: sequence, from: author, room: room, roomAccepts: roomAccepts,
            target: facts.map {
                ActionTarget(
                    author: $0.message.sender, conversationPeer: nil, isDeleted: $0.message.deletedAt != nil,
                    appliedChangeSequence: $0.changeSequence, room: $0.message.room)
            }, reactionsBySender: facts?.reactionsByAuthor ?? 0, reactionIsNew: !(facts?.hasThisReaction ?? false))
    }
    func roomMessageDeleted() { deletes += 1 }
    func authorStanding(_ author: IdentityPublicKey) -> KnownPeer.Standing? { standings[author] }
    func emit(_ e: NodeEvent) {
        if case .messageUpdated(let m) = e { updated.append(m) }
    }
}

/// Log lines, as the attack log wrote them.
final class LockedLines: Sendable {
    private let box = NIOLockedValueBox<[String]>([])
    func append(_ line: String) { box.withLockedValue { $0.append(line) } }
    func matching(_ text: String) -> [String] { box.withLockedValue { $0.filter { $0.contains(text) } } }
}

/// The attack log's time, moved by hand.
final class AttackLogClock: Sendable {
    private let box = NIOLockedValueBox(ContinuousClock.now)
    var now: ContinuousClock.Instant { box.withLockedValue { $0 } }
    func advance(by d: Duration) { box.withLockedValue { $0 += d } }
}
