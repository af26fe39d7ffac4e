import ParleyCore

/// What an mDNS advertisement means to this node before anything is dialled. Discovery
/// says where a node might be; only the handshake says who it is, so a fingerprint found
/// here (the TXT record's `fp`, or the contact a private presence token names) is only
/// the claim the handshake must prove (`AdvertisedIdentityCheck`).
///
/// A LAN attacker can advertise any name, instance, address, fingerprint or token: the
/// verdict only decides whether the planner hears of it (`DialPlanner.addDiscovered`,
/// which bounds the table and rate-limits dials of strangers' addresses per host).
public enum AdvertisementTriage {
    /// Who a private presence token names: ours, one of our contacts, or nobody we know.
    public enum PresenceMatch: Sendable, Equatable {
        case ours
        case contact(IdentityPublicKey)
        case nobody
    }

    public enum Ignored: Sendable, Equatable {
        /// Our own fingerprint under another instance name (an old record of ours).
        case ownFingerprint
        /// Another protocol version.
        case otherVersion(String)
        /// No address to dial.
        case noAddress
    }

    public enum Verdict: Sendable, Equatable {
        /// Our own advertisement came back through our browser (`parley doctor`).
        case ownAdvertisement
        case ignore(Ignored)
        /// Hand it to the planner, with the compact fingerprint the handshake must prove.
        case dial(fingerprintHint: String?)
    }

    /// `presence` is asked only for an advertisement without `fp` that carries a token
    /// (it costs one HMAC per contact).
    public static func judge(
        instance: String, ownInstance: String?, fingerprintHint: String?, ownFingerprint: String,
        carriesPresence: Bool, presence: () -> PresenceMatch, version: String?, addressCount: Int
    ) -> Verdict {
        if instance == ownInstance { return .ownAdvertisement }
        if let hint = fingerprintHint, hint == ownFingerprint { return .ignore(.ownFingerprint) }
        var hint = fingerprintHint
        if hint == nil, carriesPresence {
            switch presence() {
            case .ours: return .ownAdvertisement
            case .contact(let key): hint = Fingerprint(key).compact
            case .nobody: break
            }
        }
        if let version, version != "1" { return .ignore(.otherVersion(version)) }
        guard addressCount > 0 else { return .ignore(.noAddress) }
        return .dial(fingerprintHint: hint)
    }
}
