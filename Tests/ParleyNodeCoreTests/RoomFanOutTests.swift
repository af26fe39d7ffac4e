import ParleyCore
import ParleyNodeCore
import SeededRandom
import XCTest

/// Who a new room message goes to first (issue 30, "Rooms as big as an office").
final class RoomFanOutTests: XCTestCase {
    let keys = (0..<40).map { _ in IdentityKeyPair.generate().publicKey }
    var me: IdentityPublicKey { keys[0] }

    /// In a room where every member syncs, the author queues its message for at most
    /// `directRecipients` members, online ones first, whatever the room's size.
    func testTheAuthorSendsToABoundedNumberOfSyncingMembersOnlineFirst() {
        var rng = SplitMix64(seed: 7)
        let online = Set(keys[1...5])
        let chosen = RoomFanOut.messageRecipients(
            joined: keys, me: me, syncing: Set(keys), online: online, using: &rng)
        XCTAssertEqual(chosen.count, RoomFanOut.directRecipients)
        XCTAssertTrue(online.isSubset(of: Set(chosen)), "every online member is chosen before an offline one")
        XCTAssertFalse(chosen.contains(me))
        let manyOnline = Set(keys.dropFirst())
        let again = RoomFanOut.messageRecipients(
            joined: keys, me: me, syncing: Set(keys), online: manyOnline, using: &rng)
        XCTAssertEqual(again.count, RoomFanOut.directRecipients)
    }

    /// A member not known to sync rooms can get the message from no one but its author: it
    /// is always a recipient (the old behaviour).
    func testMembersNotKnownToSyncAlwaysGetItFromTheAuthor() {
        var rng = SplitMix64(seed: 1)
        let old = Set(keys[30...])
        let syncing = Set(keys).subtracting(old)
        let chosen = Set(
            RoomFanOut.messageRecipients(joined: keys, me: me, syncing: syncing, online: [], using: &rng))
        XCTAssertTrue(old.isSubset(of: chosen))
        XCTAssertEqual(chosen.subtracting(old).count, RoomFanOut.directRecipients)
        XCTAssertTrue(chosen.subtracting(old).isSubset(of: syncing))
    }

    /// The same generator state gives the same choice (tests and the simulation reproduce);
    /// another gives another.
    func testTheChoiceIsDeterministicForAGeneratorAndSpreadsOverMembers() {
        var a = SplitMix64(seed: 42)
        var b = SplitMix64(seed: 42)
        let x = RoomFanOut.messageRecipients(joined: keys, me: me, syncing: Set(keys), online: [], using: &a)
        let y = RoomFanOut.messageRecipients(joined: keys.reversed(), me: me, syncing: Set(keys), online: [], using: &b)
        XCTAssertEqual(x, y, "the order members are listed in does not matter")
        var seen: Set<IdentityPublicKey> = []
        for _ in 0..<50 {
            seen.formUnion(
                RoomFanOut.messageRecipients(joined: keys, me: me, syncing: Set(keys), online: [], using: &a))
        }
        XCTAssertGreaterThan(seen.count, 30, "the load spreads over the members")
    }

    /// A member that stores a new message relays it to at most `relayPeers` of its sessions
    /// of the room, not to every one.
    func testAStoredMessageIsRelayedToABoundedNumberOfSessions() {
        let room = RoomID(exactly: [UInt8](repeating: 7, count: RoomID.length))
        var s = RoomSyncStateMachine()
        var rng = SplitMix64(seed: 3)
        let t = MonotonicInstant(nanoseconds: 1_000_000_000)
        let everyone: RoomSyncStateMachine.Entitled = { _, _, _, _ in true }
        for k in keys.dropFirst(2) {
            _ = s.sessionOpened(k, sharedRooms: [room], now: t)
            _ = s.haveReceived(RoomHave(roomID: room, holding: [:]), from: k, now: t, entitled: everyone)
        }
        let told = s.stored(
            room: room, author: keys[1], sequence: 1, from: nil, now: t + .seconds(10), using: &rng)
        XCTAssertEqual(told.count, RoomFanOut.relayPeers)
        let pushed = s.tick(now: t + .seconds(16), entitled: everyone).filter {
            if case .push = $0 { return true } else { return false }
        }
        XCTAssertEqual(pushed.count, RoomFanOut.relayPeers)
    }

    /// The author's direct recipients get the message from its outbox: its relays go to
    /// others only (not a second copy to each).
    func testTheAuthorsRelaysSkipItsDirectRecipients() {
        let room = RoomID(exactly: [UInt8](repeating: 8, count: RoomID.length))
        var s = RoomSyncStateMachine()
        var rng = SplitMix64(seed: 5)
        let t = MonotonicInstant(nanoseconds: 1_000_000_000)
        let everyone: RoomSyncStateMachine.Entitled = { _, _, _, _ in true }
        let sessions = Array(keys[1...3])
        for k in sessions { _ = s.sessionOpened(k, sharedRooms: [room], now: t) }
        _ = s.stored(
            room: room, author: me, sequence: 1, from: nil, now: t, queuedFor: Set(keys[1...2]), using: &rng)
        let pushed = s.tick(now: t + .seconds(6), entitled: everyone).compactMap { a -> IdentityPublicKey? in
            if case .push(let to, _, _, _) = a { return to } else { return nil }
        }
        XCTAssertEqual(pushed, [keys[3]])
    }

    /// Every `antiEntropyInterval` a member sends its summary of a room to one session of
    /// it, in turn, so a member every relay passed over gets what it lacks from whoever
    /// holds it (the receiver pushes what the summary lacks).
    func testSummariesGoToOneSessionInTurnEveryInterval() {
        let room = RoomID(exactly: [UInt8](repeating: 9, count: RoomID.length))
        let t = MonotonicInstant(nanoseconds: 1_000_000_000)
        let everyone: RoomSyncStateMachine.Entitled = { _, _, _, _ in true }
        let peers = Array(keys[1...3]).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        var s = RoomSyncStateMachine(antiEntropyStart: 0)
        for k in peers { _ = s.sessionOpened(k, sharedRooms: [room], now: t) }
        XCTAssertEqual(s.nextDeadline, t + RoomSyncLimits.antiEntropyInterval)
        var told: [IdentityPublicKey] = []
        var now = t
        for _ in 0..<4 {
            now = now + RoomSyncLimits.antiEntropyInterval
            let actions = s.tick(now: now, entitled: everyone)
            XCTAssertEqual(actions.count, 1)
            if case .sendHave(let to, _) = actions.first { told.append(to) }
        }
        XCTAssertEqual(told, peers + [peers[0]], "in turn")
        // Another node starts its turn elsewhere: the members of a room do not all send their
        // first summary to the same member.
        var other = RoomSyncStateMachine(antiEntropyStart: 1)
        for k in peers { _ = other.sessionOpened(k, sharedRooms: [room], now: t) }
        let first = other.tick(now: t + RoomSyncLimits.antiEntropyInterval, entitled: everyone)
        XCTAssertEqual(first.first, .sendHave(to: peers[1], other.have(room)))
        // The receiving side: a holder pushes what the summary lacks.
        var holder = RoomSyncStateMachine()
        holder.load(room: room, author: keys[5], ranges: SequenceRanges([1...2]))
        _ = holder.sessionOpened(me, sharedRooms: [room], now: t)
        let pushed = holder.haveReceived(RoomHave(roomID: room, holding: [:]), from: me, now: t, entitled: everyone)
        XCTAssertTrue(pushed.contains(.push(to: me, room: room, author: keys[5], sequences: [1, 2])))
    }
}
