import ParleyCore

/// How a name the local user typed (`parley send bob …`, `trust show …`) finds one pinned
/// peer. A peer is its key: a name is only a way to find one, so a name two live peers
/// share is ambiguous (the caller lists both, with fingerprints) and never picks one.
///
/// The order, first match wins:
/// 1. the whole identity key in hex;
/// 2. the person's own nickname for a peer, exactly;
/// 3. a peer's self-asserted name, exactly, if the person gave it no nickname (a
///    nickname hides the name the peer chose, so an impostor cannot take it over);
/// 4. the label (nickname, else name), ignoring case;
/// 5. a fingerprint prefix (`Fingerprint.minimumPrefixLength` characters at least).
/// A name never takes a fingerprint from its key: a query that is also a prefix of a live
/// key's fingerprint, found by a name step (2 ... 4) as another key, is ambiguous (both are
/// listed). A peer picks its own name, so it could otherwise call itself another key's
/// fingerprint, the very text the hints tell the person to type (`parley trust accept
/// FINGERPRINT`, "send by fingerprint"), and take what was meant for that key.
/// Replaced keys are never found (their contact is the new key).
public enum PeerNameResolution {
    /// What the resolution looks at in one pinned peer.
    public struct Entry: Sendable, Equatable {
        public var identity: IdentityPublicKey
        public var displayName: String
        public var nickname: String?
        /// A person replaced this key with another (`trust.replace`).
        public var replaced: Bool

        public init(identity: IdentityPublicKey, displayName: String, nickname: String?, replaced: Bool) {
            self.identity = identity
            self.displayName = displayName
            self.nickname = nickname
            self.replaced = replaced
        }

        public var label: String { nickname ?? displayName }
    }

    public enum Outcome: Sendable, Equatable {
        /// The index of the one entry the query names.
        case found(Int)
        /// Several live entries match at the first step that matches any (their indexes).
        case ambiguous([Int])
        case notFound
    }

    public static func resolve(_ query: String, in entries: [Entry]) -> Outcome {
        let live = entries.indices.filter { !entries[$0].replaced }
        let lowered = query.lowercased()
        if let key = Sodium.fromHex(lowered).flatMap({ try? IdentityPublicKey(bytes: $0) }),
            let exact = live.first(where: { entries[$0].identity == key })
        {
            return .found(exact)
        }
        let byFingerprint = live.filter { Fingerprint(entries[$0].identity).matches(prefix: query) }
        let byName: [(Entry) -> Bool] = [
            { $0.nickname == query },
            { $0.nickname == nil && $0.displayName == query },
            { $0.label.lowercased() == lowered }
        ]
        for matches in byName {
            var found = live.filter { matches(entries[$0]) }
            guard !found.isEmpty else { continue }
            if !Set(byFingerprint).isSubset(of: found) {
                found = Array(Set(found).union(byFingerprint)).sorted()
            }
            return found.count == 1 ? .found(found[0]) : .ambiguous(found)
        }
        if byFingerprint.count == 1 { return .found(byFingerprint[0]) }
        if byFingerprint.count > 1 { return .ambiguous(byFingerprint) }
        return .notFound
    }
}
