/// A room's identifier: 16 random bytes chosen by its creator, shown as 32 hex digits.
/// Random (not derived from the name) so two rooms with the same name never collide.
public struct RoomID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let length = 16
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.length else { return nil }
        self.bytes = bytes
    }

    public init?(hex: String) {
        guard let b = Sodium.fromHex(hex), b.count == Self.length else { return nil }
        self.bytes = b
    }

    init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    public static func random() -> RoomID { RoomID(unchecked: Sodium.randomBytes(length)) }

    public var hex: String { Sodium.hex(bytes) }
    public var description: String { hex }

    public static func < (a: RoomID, b: RoomID) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}

/// The hash that names a room operation (SHA-256, 32 bytes); operations refer to their
/// parents by it, and it orders concurrent operations.
public struct RoomOperationHash: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let length = 32
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.length else { return nil }
        self.bytes = bytes
    }

    public init?(hex: String) {
        guard let b = Sodium.fromHex(hex), b.count == Self.length else { return nil }
        self.bytes = b
    }

    init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    public var hex: String { Sodium.hex(bytes) }
    public var description: String { hex }

    /// The id an `ack` record uses for this operation: its first 16 bytes. Acks carry
    /// 16-byte ids; 128 bits cannot collide by chance with a random message id.
    public var ackID: MessageID { MessageID(unchecked: Array(bytes.prefix(MessageID.length))) }

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
