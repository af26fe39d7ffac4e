/// TCP framing: each Noise message travels as a 2-byte big-endian length followed by
/// exactly that many bytes. See docs/PROTOCOL.md, "Framing".
public enum Frame {
    /// Two bytes of big-endian length.
    public static let headerLength = 2
    /// The Noise specification's maximum message size, which is also the most a 2-byte
    /// length can express: a frame holds exactly one Noise message.
    public static let maxPayloadLength = 65535
    /// Noise never produces an empty message (even an empty plaintext carries a 16-byte tag).
    public static let minPayloadLength = 1

    /// Prefixes `payload` with its length.
    public static func encode(_ payload: [UInt8]) throws(FrameError) -> [UInt8] {
        guard payload.count >= minPayloadLength else { throw .emptyFrame }
        guard payload.count <= maxPayloadLength else { throw .payloadTooLarge(length: payload.count) }
        var out: [UInt8] = []
        out.reserveCapacity(headerLength + payload.count)
        out.append(UInt8(truncatingIfNeeded: payload.count >> 8))
        out.append(UInt8(truncatingIfNeeded: payload.count))
        out += payload
        return out
    }
}
