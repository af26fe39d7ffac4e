/// Typed `data` payloads of the errors that carry one.

/// One peer a selector matched, in `peerAmbiguous` data.
public struct PeerCandidate: Codable, Sendable, Hashable {
    public var name: String
    public var fingerprint: String
    /// The candidate's trust state (`pinned`, `verified`, ...), when the daemon knows it.
    public var trust: PeerTrust?

    public init(name: String, fingerprint: String, trust: PeerTrust? = nil) {
        self.name = name
        self.fingerprint = fingerprint
        self.trust = trust
    }
}

/// `data` of `peerAmbiguous`: every peer the selector matched.
public struct PeerAmbiguousData: Codable, Sendable, Hashable {
    public var candidates: [PeerCandidate]

    public init(candidates: [PeerCandidate]) { self.candidates = candidates }
}

/// `data` of `timeout` from `messages.send` with `wait`: the message that is still queued.
public struct SendTimeoutData: Codable, Sendable, Hashable {
    public var id: String

    public init(id: String) { self.id = id }
}

/// `data` of `eventsExpired`: what the event journal still holds.
public struct EventsExpiredData: Codable, Sendable, Hashable {
    /// Every event with an id up to this one is gone; later ones are all kept.
    public var prunedThrough: Int
    /// The newest event id (0 if there never was one).
    public var lastEventId: Int

    public init(prunedThrough: Int, lastEventId: Int) {
        self.prunedThrough = prunedThrough
        self.lastEventId = lastEventId
    }
}

/// `data` of `bodyTooLarge`.
public struct BodyTooLargeData: Codable, Sendable, Hashable {
    /// UTF-8 bytes of the rejected body.
    public var bytes: Int
    public var maxBytes: Int

    public init(bytes: Int, maxBytes: Int) {
        self.bytes = bytes
        self.maxBytes = maxBytes
    }
}
