import ParleyCore

/// The duplicate-session rule (docs/PROTOCOL.md, "One session per pair"): when a second
/// authenticated session with the same peer appears, both sides must keep the same one,
/// without talking about it, or each would close the other's choice.
public enum SessionTieBreak {
    /// What the rule needs to know about one of the two sessions.
    public struct Side: Sendable, Equatable {
        public var direction: ConnectionDirection
        /// The peer's boot id as its handshake told it: random per start of the peer.
        public var remoteBootID: [UInt8]

        public init(direction: ConnectionDirection, remoteBootID: [UInt8]) {
            self.direction = direction
            self.remoteBootID = remoteBootID
        }
    }

    /// True when the `new` session replaces the `old` one.
    ///
    /// 1. The peer restarted (its boot id changed): whatever we hold from its previous run
    ///    is stale, keep the new one.
    /// 2. Same run on both sides: keep the connection initiated by the node with the
    ///    smaller identity key (bytes compared in order), so both sides pick the same.
    /// 3. Same initiator twice: keep the older one.
    public static func keepNew(_ new: Side, over old: Side, me: IdentityPublicKey, peer: IdentityPublicKey) -> Bool {
        if new.remoteBootID != old.remoteBootID { return true }
        let preferred = me.bytes.lexicographicallyPrecedes(peer.bytes) ? me : peer
        func initiator(_ s: Side) -> IdentityPublicKey { s.direction == .outbound ? me : peer }
        let newPreferred = initiator(new) == preferred
        let oldPreferred = initiator(old) == preferred
        if newPreferred != oldPreferred { return newPreferred }
        return false
    }
}
