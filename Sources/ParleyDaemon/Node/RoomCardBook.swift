import ParleyCore
import ParleyNodeCore

/// Room cards' state on the node (issue 30; docs/PROTOCOL.md "Room cards"): which cards
/// went out on each session (each once per session), how many came in, and the cards held
/// until the operation that makes their subject a member arrives. In memory only: the
/// learnt names are peer records in the store.
struct RoomCardBook {
    /// Per session peer: the identities whose card was sent on this session.
    var sent: [IdentityPublicKey: Set<IdentityPublicKey>] = [:]
    /// Per session peer: cards read, and cards that did not verify (`RoomCardLimits`).
    var read: [IdentityPublicKey: Int] = [:]
    var bad: [IdentityPublicKey: Int] = [:]
    /// Cards whose subject is not a joined member yet, oldest first (`RoomCardLimits.maxHeld`).
    var held: [(card: Card, room: RoomID, from: IdentityPublicKey)] = []

    mutating func sessionEnded(_ peer: IdentityPublicKey) {
        sent[peer] = nil
        read[peer] = nil
        bad[peer] = nil
    }

    mutating func hold(_ card: Card, room: RoomID, from: IdentityPublicKey) {
        held.removeAll { $0.card.identityKey == card.identityKey && $0.room == room }
        held.append((card, room, from))
        if held.count > RoomCardLimits.maxHeld { held.removeFirst(held.count - RoomCardLimits.maxHeld) }
    }
}
