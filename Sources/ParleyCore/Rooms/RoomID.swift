/// A room's identifier: 16 random bytes chosen by its creator, shown as 32 hex digits.
/// Random (not derived from the name) so two rooms with the same name never collide.
public struct RoomID: FixedLengthID, Comparable {
    public static let length = 16
    public let bytes: [UInt8]

    public init(exactly bytes: [UInt8]) {
        precondition(bytes.count == Self.length, "RoomID must be \(Self.length) bytes")
        self.bytes = bytes
    }

    public static func random() -> RoomID { RoomID(exactly: Sodium.randomBytes(length)) }

    public static func < (a: RoomID, b: RoomID) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}

/// The hash that names a room operation (SHA-256, 32 bytes); operations refer to their
/// parents by it, and it orders concurrent operations.
public struct RoomOperationHash: FixedLengthID, Comparable {
    public static let length = 32
    public let bytes: [UInt8]

    public init(exactly bytes: [UInt8]) {
        precondition(bytes.count == Self.length, "RoomOperationHash must be \(Self.length) bytes")
        self.bytes = bytes
    }

    /// The id an `ack` record uses for this operation: its first 16 bytes. Acks carry
    /// 16-byte ids; 128 bits cannot collide by chance with a random message id.
    public var ackID: MessageID { MessageID(exactly: Array(bytes.prefix(MessageID.length))) }

    public static func < (a: RoomOperationHash, b: RoomOperationHash) -> Bool {
        a.bytes.lexicographicallyPrecedes(b.bytes)
    }
}

extension IdentityPublicKey: Comparable {
    /// Byte-wise order: the canonical order of member lists.
    public static func < (a: IdentityPublicKey, b: IdentityPublicKey) -> Bool {
        a.bytes.lexicographicallyPrecedes(b.bytes)
    }
}
