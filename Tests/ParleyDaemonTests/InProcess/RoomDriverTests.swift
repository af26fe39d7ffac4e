import Foundation
import NIOCore
import NIOEmbedded
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// The room driver on a virtual-time loop with a real store (SQLite in a temporary
/// directory), a host that stands in for the node and links that record what the driver
/// sends. This node is alice; bob, carol and mallory are peers whose operations and
/// messages the tests sign and hand to the driver as their sessions would.
final class RoomDriverTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var directory: String!
    var store: Store!
    var alice: TestIdentity!
    var bob: TestIdentity!
    var carol: TestIdentity!
    var mallory: TestIdentity!
    var host: RoomTestHost!
    var rooms: RoomDriver<RoomTestHost>!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        directory = try makeTestDirectory("parley-rooms")
        store = try Store(directory: directory)
        alice = try TestIdentity(name: "alice")
        bob = try TestIdentity(name: "bob")
        carol = try TestIdentity(name: "carol")
        mallory = try TestIdentity(name: "mallory")
        host = RoomTestHost(card: alice.card)
        rooms = RoomDriver(
            store: store, identity: alice.keys.identity, newIdentities: .accept, loop: loop, clock: clock,
            log: testLogger(), sync: syncDriver())
        rooms.host = host
    }

    override func tearDownWithError() throws {
        rooms = nil
        host = nil
        store = nil
        _ = try? loop.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: Helpers

    /// Room sync's driver, which `RoomBook` holds; these tests do not drive it (no host).
    private func syncDriver() -> RoomSyncDriver<Node> {
        RoomSyncDriver(
            store: store, identity: alice.keys.identity, clock: clock, log: testLogger(),
            attackLog: RateLimitedLog(logger: testLogger(), level: .warning, interval: .seconds(60)))
    }

    /// A room alice created with `invited`, and each of `joining` joined (their joins
    /// received on their sessions).
    private func room(inviting invited: [TestIdentity], joining: [TestIdentity]) throws -> RoomRecord {
        let rec = try rooms.create(name: "team", members: invited.map { $0.pinnedRecord() }, policy: .init())
        for p in joining {
            let link = host.link(for: p.identity)
            rooms.received([.operation(try sign(.join, by: p, in: rec.id))], on: link)
        }
        return try XCTUnwrap(store.room(id: rec.id))
    }

    private func sign(_ change: RoomOperation.Change, by who: TestIdentity, in room: RoomID) throws -> RoomOperation {
        let state = try XCTUnwrap(rooms.entry(room).state)
        return try RoomOperation.change(change, roomID: room, after: state.heads, by: who.keys.identity, createdAt: 2)
    }

    private func chat(_ body: String, in room: RoomID, n: UInt64 = 1) -> RoomChatRecord {
        RoomChatRecord(id: .random(), roomID: room, sequence: n, createdAt: 3, body: body)
    }

    private func storedBodies(in room: RoomID) throws -> [String] {
        try store.roomMessages(room: room, after: nil, limit: 100).map(\.body)
    }

    // MARK: Waiting operations

    /// An operation whose parent has not arrived waits (not stored, not applied); when the
    /// parent arrives, the waiting one is offered again and taken, and nothing waits.
    func testAWaitingOperationIsTakenWhenItsParentArrives() throws {
        let rec = try room(inviting: [bob, carol], joining: [bob])
        let state = try XCTUnwrap(rooms.entry(rec.id).state)
        let carolJoins = try RoomOperation.change(
            .join, roomID: rec.id, after: state.heads, by: carol.keys.identity, createdAt: 2)
        let invite = try RoomOperation.change(
            .add(mallory.identity), roomID: rec.id, after: [carolJoins], by: carol.keys.identity, createdAt: 3)
        let link = host.link(for: carol.identity)

        rooms.received([.operation(invite)], on: link)  // the child first
        XCTAssertEqual(rooms.book.waiting.count(from: carol.identity), 1, "its parent is missing: it waits")
        XCTAssertNil(try rooms.entry(rec.id).operations[invite.hash])
        XCTAssertFalse(try XCTUnwrap(store.room(id: rec.id)).members.contains(mallory.identity))

        rooms.received([.operation(carolJoins)], on: link)
        XCTAssertEqual(rooms.book.waiting.total, 0, "offered again once its parent was taken")
        let stored = Set(try store.roomOperations(room: rec.id).map(\.hash))
        XCTAssertTrue(stored.isSuperset(of: [carolJoins.hash, invite.hash]))
        let now = try XCTUnwrap(store.room(id: rec.id))
        XCTAssertTrue(now.joined.contains(carol.identity))
        XCTAssertTrue(now.members.contains(mallory.identity), "carol's invitation applied")
        XCTAssertEqual(link.acks.suffix(2), [invite.hash.ackID, carolJoins.hash.ackID])
    }

    /// A room this node does not know: its log arrives from one peer, the operations before
    /// the one naming this node wait; when the create that invites alice arrives, the room
    /// is an invitation and what waited is stored with it.
    func testAnUnknownRoomsWaitingLogIsTakenWhenItsInvitationArrives() throws {
        let root = try RoomOperation.create(
            name: "bobs", members: [carol.identity], by: bob.keys.identity, createdAt: 1)
        let addAlice = try RoomOperation.change(
            .add(alice.identity), roomID: root.roomID, after: [root], by: bob.keys.identity, createdAt: 2)
        let carolJoins = try RoomOperation.change(
            .join, roomID: root.roomID, after: [root], by: carol.keys.identity, createdAt: 2)
        let link = host.link(for: bob.identity)

        rooms.received([.operation(carolJoins)], on: link)
        rooms.received([.operation(root)], on: link)  // names carol, not alice: waits
        XCTAssertEqual(rooms.book.waiting.count(from: bob.identity), 2)
        XCTAssertNil(try store.room(id: root.roomID))

        rooms.received([.operation(addAlice)], on: link)
        let rec = try XCTUnwrap(store.room(id: root.roomID))
        XCTAssertEqual(rec.status, .invited)
        XCTAssertEqual(rec.inviter, bob.identity)
        XCTAssertEqual(rooms.book.waiting.total, 0)
        XCTAssertEqual(
            Set(try store.roomOperations(room: root.roomID).map(\.hash)), [root.hash, addAlice.hash, carolJoins.hash])
        XCTAssertTrue(host.roomsUpdated.contains(root.roomID))
    }

    /// A stranger's room (round 16 review, hole D): its create, an add of alice by a
    /// non-member (never applied, so never an invitation) and then a long chain of renames.
    /// The log names alice from the second operation on; it used to be resolved whole again
    /// for every further operation (n resolutions of up to n operations: cubic work). Now
    /// only when it names alice first and each time it doubles
    /// (`UnknownRoomResolutionPacing`), and nothing of it is stored.
    func testAStrangersLogNamingThisNodeIsResolvedOnlyEachTimeItDoubles() throws {
        let renames = 300
        let root = try RoomOperation.create(name: "bait", members: [], by: mallory.keys.identity, createdAt: 1)
        let addAlice = try RoomOperation.change(
            .add(alice.identity), roomID: root.roomID, after: [root], by: carol.keys.identity, createdAt: 2)
        var ops = [root, addAlice]
        for i in 0..<renames {
            ops.append(
                try RoomOperation.change(
                    .rename("r\(i)"), roomID: root.roomID, after: [ops.last!], by: mallory.keys.identity,
                    createdAt: UInt64(3 + i)))
        }
        let link = host.link(for: mallory.identity)
        for op in ops { rooms.received([.operation(op)], on: link) }

        XCTAssertNil(try store.room(id: root.roomID), "not an invitation: the add is not authorised")
        XCTAssertEqual(rooms.book.waiting.count(from: mallory.identity), ops.count, "the log waits, bounded")
        // Sizes 2, 4, 8, ..., 256: one resolution per doubling, not one per operation (302).
        let bound = Int(log2(Double(ops.count) / 2)) + 1
        XCTAssertEqual(rooms.book.unknownRoomPacing.resolutions, bound)

        // The sender goes quiet: the tick resolves what grew since (once), still no invitation.
        loop.advanceTime(by: .nanoseconds(UnknownRoomResolutionPacing.quietInterval.wholeNanoseconds))
        rooms.tick(now: clock.monotonicNow())
        XCTAssertEqual(rooms.book.unknownRoomPacing.resolutions, bound + 1)
        rooms.tick(now: clock.monotonicNow())
        XCTAssertEqual(rooms.book.unknownRoomPacing.resolutions, bound + 1, "nothing new: not resolved again")
        XCTAssertNil(try store.room(id: root.roomID))
    }

    /// An honest log whose invitation came before one of its parents: the first resolution
    /// (when the add of alice arrives) finds it waiting; the parent that completes it does
    /// not double the log, so it is resolved on the tick once the sender is quiet, and the
    /// room is an invitation then.
    func testAnInvitationThatCameBeforeItsParentIsTakenOnTheTick() throws {
        let root = try RoomOperation.create(
            name: "bobs", members: [carol.identity], by: bob.keys.identity, createdAt: 1)
        let carolJoins = try RoomOperation.change(
            .join, roomID: root.roomID, after: [root], by: carol.keys.identity, createdAt: 2)
        let addAlice = try RoomOperation.change(
            .add(alice.identity), roomID: root.roomID, after: [carolJoins], by: bob.keys.identity, createdAt: 3)
        let link = host.link(for: bob.identity)

        rooms.received([.operation(root)], on: link)
        rooms.received([.operation(addAlice)], on: link)  // resolved: its parent is missing
        rooms.received([.operation(carolJoins)], on: link)  // 3 < 2 x 2: not resolved yet
        XCTAssertEqual(rooms.book.unknownRoomPacing.resolutions, 1)
        XCTAssertNil(try store.room(id: root.roomID))

        rooms.tick(now: clock.monotonicNow())
        XCTAssertNil(try store.room(id: root.roomID), "the sender was not quiet yet")
        loop.advanceTime(by: .nanoseconds(UnknownRoomResolutionPacing.quietInterval.wholeNanoseconds))
        rooms.tick(now: clock.monotonicNow())
        let rec = try XCTUnwrap(store.room(id: root.roomID))
        XCTAssertEqual(rec.status, .invited)
        XCTAssertEqual(
            Set(try store.roomOperations(room: root.roomID).map(\.hash)), [root.hash, addAlice.hash, carolJoins.hash])
        XCTAssertEqual(rooms.book.waiting.total, 0)
        XCTAssertTrue(rooms.book.unknownRoomPacing.keys.isEmpty, "nothing left to pace")
    }

    /// What waits is dropped after `RoomAdmission.waitingTimeoutSeconds` whoever sends
    /// next: a peer that sent operations with missing parents and never came back (or a
    /// key made up for one session) does not keep them in memory for good.
    func testWaitingOperationsOfAPeerThatWentAwayExpire() throws {
        let rec = try room(inviting: [bob], joining: [bob])
        let state = try XCTUnwrap(rooms.entry(rec.id).state)
        let orphanParent = try RoomOperation.change(
            .rename("a"), roomID: rec.id, after: state.heads, by: mallory.keys.identity, createdAt: 2)
        for n in 0..<3 {
            let orphan = try RoomOperation.change(
                .rename("m\(n)"), roomID: rec.id, after: [orphanParent], by: mallory.keys.identity, createdAt: 3)
            rooms.received([.operation(orphan)], on: host.link(for: mallory.identity))
        }
        XCTAssertEqual(rooms.book.waiting.count(from: mallory.identity), 3)
        loop.advanceTime(by: .seconds(Int64(RoomAdmission.waitingTimeoutSeconds)))
        let bobsOrphan = try RoomOperation.change(
            .rename("b"), roomID: rec.id, after: [orphanParent], by: bob.keys.identity, createdAt: 3)
        rooms.received([.operation(bobsOrphan)], on: host.link(for: bob.identity))
        XCTAssertEqual(rooms.book.waiting.count(from: mallory.identity), 0, "timed out, dropped")
        XCTAssertEqual(rooms.book.waiting.total, 1)
    }

    /// The daemon's tick drops what waited its time even when no peer sends anything more:
    /// a peer that sent operations with missing parents and vanished does not keep them in
    /// memory until some other peer's operation is held.
    func testWaitingOperationsExpireOnTheTickWithoutAnotherOperation() throws {
        let rec = try room(inviting: [bob], joining: [bob])
        let state = try XCTUnwrap(rooms.entry(rec.id).state)
        let orphanParent = try RoomOperation.change(
            .rename("a"), roomID: rec.id, after: state.heads, by: mallory.keys.identity, createdAt: 2)
        let orphan = try RoomOperation.change(
            .rename("m"), roomID: rec.id, after: [orphanParent], by: mallory.keys.identity, createdAt: 3)
        rooms.received([.operation(orphan)], on: host.link(for: mallory.identity))
        XCTAssertEqual(rooms.book.waiting.total, 1)

        loop.advanceTime(by: .seconds(Int64(RoomAdmission.waitingTimeoutSeconds) - 1))
        rooms.tick(now: clock.monotonicNow())
        XCTAssertEqual(rooms.book.waiting.total, 1, "not yet timed out: still waiting")
        loop.advanceTime(by: .seconds(1))
        rooms.tick(now: clock.monotonicNow())
        XCTAssertEqual(rooms.book.waiting.total, 0, "timed out: dropped on the tick")
    }

    // MARK: Held messages

    /// A held message resent by its author (ack timeouts: it is never acknowledged while
    /// held) is judged by the receive quota once: the strangers' shared rate loses one
    /// message's worth, not one per resend.
    func testAHeldMessageResentManyTimesTakesFromTheStrangersRateOnce() throws {
        let rec = try room(inviting: [bob, carol], joining: [bob])
        let quota = ReceiveQuotaDriver(
            store: store, directory: PeerDirectory(store: store, myName: "alice"), limits: .standard, clock: clock,
            log: testLogger())
        host.quota = quota
        let carolLink = host.link(for: carol.identity)
        let early = chat("before my join reached you", in: rec.id)
        for _ in 0..<5 { rooms.received([.chat(early)], on: carolLink) }
        rooms.received([.chat(early), .chat(early)], on: carolLink)
        XCTAssertEqual(rooms.book.heldChats.held(from: carol.identity).map(\.id), [early.id])
        XCTAssertTrue(carolLink.acks.isEmpty)

        var once = StrangerIntake(now: clock.monotonicNow())
        XCTAssertTrue(once.take(size: early.body.utf8.count, now: clock.monotonicNow()))
        XCTAssertEqual(quota.cache.strangerIntake, once, "one message's worth taken, not one per resend")

        // Released when carol's join arrives: stored once, no further charge.
        rooms.received([.operation(try sign(.join, by: carol, in: rec.id))], on: host.link(for: bob.identity))
        XCTAssertEqual(try storedBodies(in: rec.id), ["before my join reached you"])
        XCTAssertEqual(quota.cache.strangerIntake, once)
    }

    /// A message from an author not yet known as a joined member is held, unacknowledged
    /// and not stored; when the operation that makes it one arrives, it is stored,
    /// acknowledged on its author's session, counted against its quota and shown.
    func testHeldMessagesAreReleasedStoredAndCountedWhenTheirAuthorJoins() throws {
        let rec = try room(inviting: [bob, carol], joining: [bob])
        let carolLink = host.link(for: carol.identity)
        let early = chat("before my join reached you", in: rec.id)

        rooms.received([.chat(early)], on: carolLink)
        XCTAssertEqual(rooms.book.heldChats.held(from: carol.identity).map(\.id), [early.id])
        XCTAssertTrue(carolLink.acks.isEmpty, "held, not acknowledged: carol keeps it queued")
        XCTAssertEqual(try storedBodies(in: rec.id), [])

        // carol's join reaches alice through bob.
        let carolJoins = try sign(.join, by: carol, in: rec.id)
        rooms.received([.operation(carolJoins)], on: host.link(for: bob.identity))
        XCTAssertEqual(try storedBodies(in: rec.id), ["before my join reached you"])
        XCTAssertEqual(carolLink.acks, [early.id], "acknowledged on its author's session")
        XCTAssertEqual(host.quotaCounted[carol.identity], [early.body.utf8.count])
        XCTAssertEqual(host.received.map(\.id), [early.id])
        XCTAssertTrue(rooms.book.heldChats.held(from: carol.identity).isEmpty)
        XCTAssertEqual(rooms.book.heldChats.totalBytes, 0)
    }

    /// Held messages are dropped when their author's session ends (it sends them again on
    /// the next one: none was acknowledged), so authors that went away, or keys made up
    /// for one session, do not keep the shared bound filled and honest newcomers' early
    /// messages unheld.
    func testHeldMessagesAreDroppedWhenTheirAuthorsSessionEnds() throws {
        let rec = try room(inviting: [bob, carol], joining: [bob])
        let carolLink = host.link(for: carol.identity)
        rooms.received([.chat(chat("early", in: rec.id))], on: carolLink)
        XCTAssertEqual(rooms.book.heldChats.held(from: carol.identity).count, 1)
        XCTAssertEqual(rooms.book.heldChats.totalBytes, 5)

        rooms.sessionEnded(carol.identity)
        XCTAssertTrue(rooms.book.heldChats.held(from: carol.identity).isEmpty)
        XCTAssertEqual(rooms.book.heldChats.totalBytes, 0)
        XCTAssertTrue(carolLink.acks.isEmpty, "never acknowledged: carol still has it queued")
    }

    /// A removed member (or any peer that names a room alice is in) keeps sending room
    /// messages, one per read: they are held, never stored, and alice's log says so once
    /// per author per interval, not once per read (the log is not the attacker's to fill).
    func testARemovedMembersHeldMessagesAreLoggedOncePerInterval() throws {
        let lines = CollectedLogLines()
        rooms = RoomDriver(
            store: store, identity: alice.keys.identity, newIdentities: .accept, loop: loop, clock: clock,
            log: lines.logger(level: .info), sync: syncDriver())
        rooms.host = host
        let rec = try room(inviting: [bob, carol], joining: [bob, carol])
        _ = try rooms.change(rec, .remove(bob.identity))
        let bobLink = host.link(for: bob.identity)
        let acksBefore = bobLink.acks
        for i in 0..<200 { rooms.received([.chat(chat("spam \(i)", in: rec.id, n: UInt64(i + 1)))], on: bobLink) }
        XCTAssertEqual(try storedBodies(in: rec.id), [])
        XCTAssertEqual(bobLink.acks, acksBefore, "none acknowledged")
        let held = lines.lines.filter { $0.contains("are held, unacknowledged") }
        XCTAssertEqual(held.count, 1, "\(held.count) lines for 200 reads")
    }

    // MARK: Who may act

    /// An operation by someone who is not a member is refused and logged as an attack: not
    /// stored, the room unchanged.
    func testAnOperationFromANonMemberIsRefusedAndLogged() throws {
        let rec = try room(inviting: [bob], joining: [bob])
        let forged = try sign(.add(mallory.identity), by: mallory, in: rec.id)
        rooms.received([.operation(forged)], on: host.link(for: mallory.identity))
        XCTAssertFalse(try store.roomOperations(room: rec.id).map(\.hash).contains(forged.hash))
        XCTAssertFalse(try XCTUnwrap(store.room(id: rec.id)).members.contains(mallory.identity))
        XCTAssertTrue(
            host.attacks.contains { $0.message == "room operation refused" && $0.fields["why"] == "notAuthorised" },
            "\(host.attacks)")
    }

    /// A member alice removed: its messages are not stored nor acknowledged, and its
    /// operations signed after the removal are refused and logged.
    func testARemovedMembersTrafficIsRefused() throws {
        let rec = try room(inviting: [bob, carol], joining: [bob, carol])
        _ = try rooms.change(rec, .remove(bob.identity))
        XCTAssertFalse(try XCTUnwrap(store.room(id: rec.id)).joined.contains(bob.identity))
        let bobLink = host.link(for: bob.identity)

        let late = chat("still here?", in: rec.id)
        rooms.received([.chat(late)], on: bobLink)
        XCTAssertEqual(try storedBodies(in: rec.id), [], "not stored")
        XCTAssertFalse(bobLink.acks.contains(late.id), "not acknowledged")

        let rename = try sign(.rename("bob's now"), by: bob, in: rec.id)
        rooms.received([.operation(rename)], on: bobLink)
        XCTAssertEqual(try store.room(id: rec.id)?.name, "team")
        XCTAssertFalse(try store.roomOperations(room: rec.id).map(\.hash).contains(rename.hash))
        XCTAssertTrue(host.attacks.contains { $0.message == "room operation refused" }, "\(host.attacks)")
    }

    // MARK: Names a LAN peer picks

    /// Any peer with a session can name any room id, in a chat, an operation or a card: a
    /// room the store holds nothing of is not remembered in memory, so naming a million of
    /// them costs the node no memory (it used to keep an empty entry for each, for good).
    func testRoomIDsAPeerMakesUpAreNotRemembered() throws {
        let link = host.link(for: mallory.identity)
        for _ in 0..<50 {
            let made = RoomID.random()
            rooms.received([.chat(chat("hi", in: made))], on: link)
            let root = try RoomOperation.create(
                name: "x", members: [bob.identity], by: mallory.keys.identity, createdAt: 1)
            let child = try RoomOperation.change(
                .rename("y"), roomID: made, after: [root], by: mallory.keys.identity, createdAt: 2)
            rooms.received([.operation(child)], on: link)
            rooms.received([.card(RoomCardRecord(roomID: made, card: bob.card.encoded()))], on: link)
        }
        XCTAssertEqual(rooms.book.entries.count, 0, "no room entry for a room nobody holds")
        XCTAssertEqual(link.acks.count, 100, "the chats (not for us) and operations are acknowledged")
    }

    // MARK: Store failures

    /// The store fails to keep a read's room messages: none is acknowledged (the author
    /// keeps them queued), what came before in the read is, and the session is closed; a
    /// receive quota that cannot count takes nothing of the read.
    func testAStoreThatFailsLosesNoRoomMessage() throws {
        let failing = FailingRoomStore(store)
        rooms = RoomDriver(
            store: failing, identity: alice.keys.identity, newIdentities: .accept, loop: loop, clock: clock,
            log: testLogger(), sync: syncDriver())
        rooms.host = host
        let rec = try room(inviting: [bob], joining: [bob])
        let bobLink = host.link(for: bob.identity)
        let joinAck = try XCTUnwrap(bobLink.acks.last)
        failing.failStoreIncoming = true
        let lost = chat("not stored", in: rec.id)
        rooms.received([.chat(lost)], on: bobLink)
        XCTAssertFalse(bobLink.acks.contains(lost.id), "not acknowledged: bob sends it again")
        XCTAssertEqual(bobLink.closed, DirectMessageDriverCloseText.receiverStorageFailure)
        XCTAssertEqual(bobLink.acks.last, joinAck)
        XCTAssertEqual(try storedBodies(in: rec.id), [])

        failing.failStoreIncoming = false
        host.quotaCountFails = true
        let uncounted = chat("not counted", in: rec.id, n: 2)
        let carolLink = host.link(for: carol.identity)
        rooms.received([.chat(uncounted)], on: carolLink)
        XCTAssertEqual(carolLink.closed, DirectMessageDriverCloseText.receiverStorageFailure)
        XCTAssertTrue(carolLink.acks.isEmpty)
        XCTAssertTrue(rooms.book.heldChats.held(from: carol.identity).isEmpty, "not even held")
    }

    // MARK: Sending

    /// Room sync's fan-out picks bob only (carol syncs rooms and would get alice's message
    /// from a member passing it on), but the message could not be signed: nobody can pass
    /// an unsigned message on, so it is queued for every member, carol too. Queued for the
    /// fan-out's pick alone, carol would never receive it while alice saw it delivered.
    func testAMessageThatCouldNotBeSignedIsQueuedForEveryMember() throws {
        let rec = try room(inviting: [bob, carol], joining: [bob, carol])
        host.fanOut = [bob.identity]
        let sent = try XCTUnwrap(rooms.send([(rec, "minutes attached", nil)]).first?.get())
        XCTAssertEqual(try store.pendingRoomMessages(to: bob.identity, limit: 10).map(\.id), [sent.id])
        XCTAssertEqual(try store.pendingRoomMessages(to: carol.identity, limit: 10).map(\.id), [sent.id])
    }

    // MARK: The pumps

    /// A queued operation goes out within the session's window, followed by its actor's
    /// card once per session; an acknowledgement clears it from the outbox.
    func testThePumpSendsQueuedOperationsWithTheirActorsCardOnce() throws {
        let rec = try rooms.create(name: "team", members: [bob.pinnedRecord()], policy: .init())
        let link = host.link(for: bob.identity)
        rooms.pumpOperations(link, peer: bob.identity)
        XCTAssertEqual(link.operations.map(\.roomID), [rec.id])
        XCTAssertEqual(link.cards.map(\.roomID), [rec.id], "alice's card after her create")
        let create = try XCTUnwrap(link.operations.first)
        _ = host.withWindow(of: link) { $0.acknowledge([create.hash.ackID]) }
        rooms.acknowledged([create.hash.ackID], by: bob.identity)
        XCTAssertEqual(try store.pendingRoomOperations(to: bob.identity, limit: 10), [])

        _ = try rooms.change(rec, .rename("crew"))
        rooms.pumpOperations(link, peer: bob.identity)
        XCTAssertEqual(link.operations.count, 2)
        XCTAssertEqual(link.cards.count, 1, "a card goes once per session")
    }

    /// A remove is signed with the cap room sync gives (docs/PROTOCOL.md "Removal caps")
    /// and stored; it waits in the outbox of a member whose node cannot decode it (no
    /// bit 7), and goes to one that can.
    func testACappedRemoveIsSignedAndGoesOnlyToNodesThatReadCaps() throws {
        let rec = try room(inviting: [bob, carol, mallory], joining: [bob, carol, mallory])
        host.capToSign = 4
        _ = try rooms.change(rec, .remove(carol.identity))
        let removal = try XCTUnwrap(
            rooms.entry(rec.id).operations.values.first { $0.kind == .remove && $0.target == carol.identity })
        XCTAssertEqual(removal.removalCap, 4)

        let old = host.link(for: bob.identity)
        old.remoteFeatures.remove(.removalCaps)
        rooms.pumpOperations(old, peer: bob.identity)
        XCTAssertFalse(old.operations.contains(removal), "an older node would take it for malformed")
        XCTAssertTrue(
            try store.pendingRoomOperations(to: bob.identity, limit: 100).contains { $0.hash == removal.hash },
            "it stays queued until bob's node reads caps")
        old.remoteFeatures = .supported
        rooms.pumpOperations(old, peer: bob.identity)
        XCTAssertTrue(old.operations.contains(removal))
    }
}

/// A session's connection in the room driver's tests: it records what was sent.
final class RoomTestLink: MessageLink {
    let peer: IdentityPublicKey
    var isWritable = true
    var remoteFeatures: ProtocolFeatures = .supported
    var remoteIdentityKey: IdentityPublicKey? { peer }
    private(set) var acks: [MessageID] = []
    private(set) var operations: [RoomOperation] = []
    private(set) var cards: [RoomCardRecord] = []
    private(set) var chats: [RoomChatRecord] = []
    private(set) var closed: String?

    init(peer: IdentityPublicKey) { self.peer = peer }

    func send(_ record: AppRecord) {
        switch record {
        case .ack(let ids): acks += ids
        case .roomOperation(let op): operations.append(op)
        case .roomCard(let c): cards.append(c)
        case .roomChat(let c): chats.append(c)
        default: break
        }
    }

    func close(reason: CloseReason, text: String) { closed = text }
}

/// Stands in for the node: one session per peer with its window; room sync does nothing
/// (messages go unsigned to every joined member); the receive quota takes everything and
/// records what was counted; the security log and the observers are recorded.
final class RoomTestHost: RoomHost {
    typealias Link = RoomTestLink
    let card: Card
    var links: [IdentityPublicKey: RoomTestLink] = [:]
    var windows: [ObjectIdentifier: SendWindow] = [:]
    var peers: [IdentityPublicKey: PeerRecord] = [:]
    var attacks: [(key: String, message: String, fields: [String: String])] = []
    var received: [StoredMessage] = []
    var roomsUpdated: [RoomID] = []
    var quotaCounted: [IdentityPublicKey: [Int]] = [:]
    var pumped: [IdentityPublicKey] = []
    /// The receive quota's count fails (the store cannot say what the author keeps).
    var quotaCountFails = false

    init(card: Card) { self.card = card }

    func link(for peer: IdentityPublicKey) -> RoomTestLink {
        if let l = links[peer] { return l }
        let l = RoomTestLink(peer: peer)
        links[peer] = l
        windows[ObjectIdentifier(l)] = SendWindow(limits: SendWindowLimits())
        return l
    }

    func activePeer(of link: RoomTestLink) -> IdentityPublicKey? { links[link.peer] === link ? link.peer : nil }
    func activeConnection(for peer: IdentityPublicKey) -> RoomTestLink? { links[peer] }
    func withWindow<R>(of link: RoomTestLink, _ body: (inout SendWindow) -> R) -> R? {
        guard windows[ObjectIdentifier(link)] != nil else { return nil }
        return body(&windows[ObjectIdentifier(link)]!)
    }
    func promote(_ peer: IdentityPublicKey) {}
    func pump(_ link: RoomTestLink) { pumped.append(link.peer) }
    /// A real receive quota, when a test sets one (else everything is taken).
    var quota: ReceiveQuotaDriver?
    func judgeByQuota(_ chats: [RoomChatRecord], from sender: IdentityPublicKey) throws(StoreError)
        -> (store: [RoomChatRecord], refused: [(RefusalReason, [MessageID])])
    {
        if quotaCountFails { throw StoreError.io(path: "test", reason: "count failed") }
        guard let quota else { return (chats, []) }
        let (verdicts, refused) = try quota.judge(chats.map { ($0.id, $0.body.utf8.count) }, from: sender)
        return (zip(chats, verdicts).filter { $0.1 == nil }.map(\.0), refused)
    }
    func sendRefusals(_ refused: [(RefusalReason, [MessageID])], on link: RoomTestLink) {}
    func quotaStored(_ bodies: [Int], from sender: IdentityPublicKey) {
        if !bodies.isEmpty { quotaCounted[sender, default: []] += bodies }
    }
    func roomSyncMembershipChanged(_ state: RoomState) {}
    /// The rooms whose capped removes changed, in order.
    var cappedRemovalsChanged: [RoomID] = []
    func roomCappedRemovalsChanged(_ room: RoomID, from old: RoomCappedRemovals, to new: RoomCappedRemovals) {
        cappedRemovalsChanged.append(room)
    }
    /// The cap a remove is signed with (how it is chosen is `RoomRemovalCapTests`' concern).
    var capToSign: UInt64?
    func roomRemovalCapToSign(target: IdentityPublicKey, in state: RoomState) throws(StoreError) -> UInt64? {
        capToSign
    }
    func boundedOperationPlan(
        _ plan: RoomDistribution.OperationPlan, for op: RoomOperation, after: RoomState
    ) -> RoomDistribution.OperationPlan { plan }
    /// Who room sync's fan-out picks for this node's own message (nil: every member).
    var fanOut: [IdentityPublicKey]?
    func roomMessageRecipients(_ state: RoomState) -> [IdentityPublicKey] {
        fanOut ?? RoomDistribution.messageRecipients(in: state, me: card.identityKey)
    }
    /// This node's room messages are not signed (as when its sequence cannot be read).
    func signRoomMessage(
        id: MessageID, room: RoomID, sequence: UInt64, state: RoomState, body: String, createdAt: Int64,
        replyTo: MessageID?
    ) -> SignedRoomMessage? { nil }
    func roomSyncStoredOwn(_ m: SignedRoomMessage, queuedFor recipients: [IdentityPublicKey]) {}
    func signedRoomMessageForSending(_ m: StoredMessage, to peer: IdentityPublicKey) -> SignedRoomMessage? { nil }
    func roomDeliveryChanged(_ change: RoomDeliveryChange) {}
    func receivedSignedRoomMessages(
        _ arrivals: [RoomMessageArrival], from peer: IdentityPublicKey, on link: RoomTestLink
    ) throws(StoreError) -> (acks: [MessageID], shown: [StoredMessage]) { ([], []) }
    func receivedRoomHave(_ have: RoomHave, from peer: IdentityPublicKey) {}
    func receivedRoomOperationsHave(_ have: RoomOperationsHave, from peer: IdentityPublicKey, on link: RoomTestLink)
        throws(StoreError)
    {}
    func peerRecord(_ identity: IdentityPublicKey) -> PeerRecord? { peers[identity] }
    func upsertPeer(_ rec: PeerRecord) throws(StoreError) { peers[rec.identity] = rec }
    func nameClash(of identity: IdentityPublicKey) -> NameClashes.Clash? { nil }
    func currentCard() -> Card { card }
    func emit(_ e: NodeEvent) {
        switch e {
        case .messageReceived(let m): received.append(m)
        case .roomUpdated(let r): roomsUpdated.append(r.id)
        default: break
        }
    }
    func logAttack(key: String, _ message: String, _ fields: [String: String]) {
        attacks.append((key, message, fields))
    }
}

/// A real store behind the `RoomStore` seam that fails storing received room messages when
/// told.
final class FailingRoomStore: RoomStore {
    let inner: Store
    var failStoreIncoming = false
    init(_ inner: Store) { self.inner = inner }

    func roomOperations(room: RoomID) throws(StoreError) -> [StoredRoomOperation] {
        try inner.roomOperations(room: room)
    }
    func insertRoomOperation(_ op: StoredRoomOperation, at: Int64) throws(StoreError) -> Bool {
        try inner.insertRoomOperation(op, at: at)
    }
    func room(id: RoomID) throws(StoreError) -> RoomRecord? { try inner.room(id: id) }
    func rooms() throws(StoreError) -> [RoomRecord] { try inner.rooms() }
    func saveRoom(_ room: RoomRecord) throws(StoreError) { try inner.saveRoom(room) }
    func invitationCount(from inviter: IdentityPublicKey) throws(StoreError) -> Int {
        try inner.invitationCount(from: inviter)
    }
    func forgetInvitations(before: Int64) throws(StoreError) -> [RoomID] { try inner.forgetInvitations(before: before) }
    func queueRoomOperations(_ hashes: [RoomOperationHash], for members: [IdentityPublicKey], at: Int64)
        throws(StoreError)
    {
        try inner.queueRoomOperations(hashes, for: members, at: at)
    }
    func pendingRoomOperations(to member: IdentityPublicKey, limit: Int) throws(StoreError) -> [StoredRoomOperation] {
        try inner.pendingRoomOperations(to: member, limit: limit)
    }
    func acknowledgeRoomOperations(ackIDs: [MessageID], by member: IdentityPublicKey) throws(StoreError) -> Int {
        try inner.acknowledgeRoomOperations(ackIDs: ackIDs, by: member)
    }
    func queuedRoomMessageCount(room: RoomID) throws(StoreError) -> Int { try inner.queuedRoomMessageCount(room: room) }
    func nextRoomSequence(room: RoomID, author: IdentityPublicKey) throws(StoreError) -> UInt64 {
        try inner.nextRoomSequence(room: room, author: author)
    }
    func enqueueRoomMessages(_ messages: [Store.NewRoomMessage], sender: IdentityPublicKey) throws(StoreError)
        -> [StoredMessage]
    {
        try inner.enqueueRoomMessages(messages, sender: sender)
    }
    func pendingRoomMessages(to member: IdentityPublicKey, limit: Int) throws(StoreError) -> [StoredMessage] {
        try inner.pendingRoomMessages(to: member, limit: limit)
    }
    func storeIncomingRoomMessages(_ messages: [IncomingMessage], room: RoomID, at: Int64)
        throws(StoreError) -> [(message: StoredMessage, isNew: Bool)]
    {
        if failStoreIncoming { throw .io(path: inner.path, reason: "disk I/O error (test)") }
        return try inner.storeIncomingRoomMessages(messages, room: room, at: at)
    }
    func acknowledgeRoomTraffic(ids: [MessageID], by member: IdentityPublicKey, at: Int64) throws(StoreError)
        -> RoomDeliveryChange
    {
        try inner.acknowledgeRoomTraffic(ids: ids, by: member, at: at)
    }
    var roomOutboxesMayHaveWork: Bool { inner.roomOutboxesMayHaveWork }
}
