/// A room's identifier: the first 16 bytes of its create operation's hash, shown as 32 hex
/// digits. Committing to the signed create means nobody can claim a known room id with a
/// create of their own (that would take a second preimage of 128 bits); the create's
/// random nonce keeps two rooms with the same name and members apart.
public struct RoomID: FixedLengthID, Comparable {
    public static let length = 16
    public let bytes: [UInt8]

    public func hash(into hasher: inout Hasher) { hashFixedLengthBytes(bytes, into: &hasher) }

    public init(exactly bytes: [UInt8]) {
        precondition(bytes.count == Self.length, "RoomID must be \(Self.length) bytes")
        self.bytes = bytes
    }

    public static func random() -> RoomID { RoomID(exactly: Sodium.randomBytes(length)) }

    /// The id of the room founded by the create whose hash this is.
    public init(committingTo createHash: RoomOperationHash) {
        self.init(exactly: Array(createHash.bytes.prefix(Self.length)))
    }

    public static func < (a: RoomID, b: RoomID) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}

/// The hash that names a room operation (SHA-256, 32 bytes); operations refer to their
/// parents by it, and it orders concurrent operations.
public struct RoomOperationHash: FixedLengthID, Comparable {
    public static let length = 32
    public let bytes: [UInt8]

    public func hash(into hasher: inout Hasher) { hashFixedLengthBytes(bytes, into: &hasher) }

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
