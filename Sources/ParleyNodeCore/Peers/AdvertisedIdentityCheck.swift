import ParleyCore

/// The spoof check: a connection dialled from an mDNS advertisement carries the
/// fingerprint the advertisement claimed, and the handshake proves a key. An attacker on
/// the LAN can advertise anything under any name; only the proof counts, so a mismatch
/// closes the connection before any trust decision (nothing is pinned) and flags the dial
/// target (`DialPlanner.spoofDetected`).
public enum AdvertisedIdentityCheck: Sendable, Equatable {
    /// Not dialled from an advertisement (a configured address, an inbound connection).
    case noClaim
    case matches
    /// The advertisement claimed `claimed`; the handshake proved another key.
    case spoofed(claimed: String)

    /// `claimed`: the compact fingerprint from the advertisement's TXT record, as dialled.
    public static func check(claimed: String?, proven: IdentityPublicKey) -> AdvertisedIdentityCheck {
        guard let claimed else { return .noClaim }
        return claimed == Fingerprint(proven).compact ? .matches : .spoofed(claimed: claimed)
    }
}
