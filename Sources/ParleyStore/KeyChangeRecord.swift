import ParleyCore

/// What the user decided about a key change.
public enum KeyChangeStatus: String, Codable, Sendable {
    case pending, accepted, rejected
}

/// A known name now presented by a different identity: held until the user decides.
public struct KeyChangeRecord: Sendable, Equatable {
    public var id: Int64
    public var displayName: String
    /// The identity of the peer that had the name.
    public var oldIdentity: IdentityPublicKey
    /// The identity that now claims it.
    public var newIdentity: IdentityPublicKey
    /// The encoded card the new identity presented (refreshed if it is seen again while pending).
    public var newCard: [UInt8]
    /// "host:port" where the new identity was seen.
    public var address: String?
    /// Unix ms of first detection.
    public var detectedAt: Int64
    public var status: KeyChangeStatus
    /// Unix ms of the user's decision; nil while pending.
    public var resolvedAt: Int64?

    public init(
        id: Int64, displayName: String, oldIdentity: IdentityPublicKey, newIdentity: IdentityPublicKey,
        newCard: [UInt8],
        address: String?, detectedAt: Int64, status: KeyChangeStatus, resolvedAt: Int64? = nil
    ) {
        self.id = id
        self.displayName = displayName
        self.oldIdentity = oldIdentity
        self.newIdentity = newIdentity
        self.newCard = newCard
        self.address = address
        self.detectedAt = detectedAt
        self.status = status
        self.resolvedAt = resolvedAt
    }
}
