import ParleyCore

/// Whether a nickname the person gives a key may stand. A nickname is the strongest name in
/// `PeerNameResolution` (it wins over every self-asserted name), so a nickname that looks like
/// another live peer's name (or ours) would make that name find this key: one call
/// (`peers.nickname`, which the browser page may make) would send the next message the person
/// addresses to "bob" to whichever key was nicknamed "bob". A nickname must tell keys apart.
/// Pure: the same skeletons as `NameClashes`.
public enum NicknameCheck {
    public enum Refusal: Sendable, Equatable {
        /// It looks like these other peers' labels or self-asserted names (ascending by key).
        case looksLikeAnotherPeer([IdentityPublicKey])
        /// It looks like this node's own name.
        case looksLikeMe
    }

    /// - `entries`: every live peer (replaced keys are never found by a name; blocked and
    ///   held ones are: a block can be lifted, and a page may block).
    public static func check(
        _ nickname: String?, for peer: IdentityPublicKey, among entries: [NameClashes.Entry], myName: String
    ) -> Refusal? {
        guard let nickname else { return nil }
        let skeleton = NameSkeleton.of(nickname)
        let others = entries.filter { e in
            e.identity != peer
                && (NameSkeleton.of(e.label) == skeleton || NameSkeleton.of(e.selfAssertedName) == skeleton)
        }
        if !others.isEmpty {
            return .looksLikeAnotherPeer(
                others.map(\.identity).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) })
        }
        return NameSkeleton.of(myName) == skeleton ? .looksLikeMe : nil
    }
}
