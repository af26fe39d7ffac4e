import ParleyCore

/// Which peers' names a person could confuse (docs/PROTOCOL.md, "Names are labels"). A
/// name is what a peer says about itself: two keys may present the same name, or names
/// that look alike, and neither changes who either of them is. The node marks them, so a
/// person who reads "bob" knows to look at the fingerprint.
public enum NameClashes {
    /// One named peer as the person sees it.
    public struct Entry: Sendable, Equatable {
        public var identity: IdentityPublicKey
        /// What the peer calls itself (from its card).
        public var selfAssertedName: String
        /// The person's own name for it, if they gave one: it is what they see.
        public var nickname: String?

        public init(identity: IdentityPublicKey, selfAssertedName: String, nickname: String? = nil) {
            self.identity = identity
            self.selfAssertedName = selfAssertedName
            self.nickname = nickname
        }

        /// The label shown: the person's nickname wins over the self-asserted name.
        public var label: String { nickname ?? selfAssertedName }
    }

    public enum Kind: String, Sendable, Equatable {
        /// Another peer shows exactly the same label.
        case sameName
        /// Another peer's label looks the same (same skeleton: case, look-alike letters).
        case confusable
    }

    public struct Clash: Sendable, Equatable {
        public var kind: Kind
        /// The other peers it can be confused with (ascending by key bytes).
        public var with: [IdentityPublicKey]
    }

    /// The clash of every entry that has one: an entry is marked when its label looks like
    /// another entry's label or another entry's self-asserted name (so a key calling itself
    /// "bob" stays marked after the person nicknamed the real bob "Bob (lab)": it still
    /// claims a contact's name), or like our own name (it could pass for us in a room).
    public static func find(_ entries: [Entry], myName: String? = nil) -> [IdentityPublicKey: Clash] {
        var byName: [String: [Entry]] = [:]
        for e in entries {
            for skeleton in Set([NameSkeleton.of(e.label), NameSkeleton.of(e.selfAssertedName)]) {
                byName[skeleton, default: []].append(e)
            }
        }
        let mySkeleton = myName.map(NameSkeleton.of)
        var result: [IdentityPublicKey: Clash] = [:]
        for e in entries {
            let skeleton = NameSkeleton.of(e.label)
            let others = (byName[skeleton] ?? []).filter { $0.identity != e.identity }
            let resemblesMe = mySkeleton == skeleton
            guard !others.isEmpty || resemblesMe else { continue }
            let exact =
                others.contains { $0.label == e.label || $0.selfAssertedName == e.label }
                || (resemblesMe && myName == e.label)
            result[e.identity] = Clash(
                kind: exact ? .sameName : .confusable,
                with: others.map(\.identity).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) })
        }
        return result
    }
}
