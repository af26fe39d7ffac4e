/// A file transfer's id: 16 random bytes chosen by the sender. A receiver keys a
/// transfer on (sender identity, transfer id), so two senders cannot collide on purpose.
public struct TransferID: FixedLengthID {
    public static let length = 16
    public let bytes: [UInt8]

    public func hash(into hasher: inout Hasher) { hashFixedLengthBytes(bytes, into: &hasher) }

    public init(exactly bytes: [UInt8]) {
        precondition(bytes.count == Self.length, "TransferID must be \(Self.length) bytes")
        self.bytes = bytes
    }

    public static func random() -> TransferID { TransferID(exactly: Sodium.randomBytes(length)) }
}
