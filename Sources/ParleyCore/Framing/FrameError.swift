/// Why bytes could not be framed or unframed. Either one means the TCP stream is
/// unusable: the peer is broken or hostile, so the connection should be closed.
public enum FrameError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A header announced length 0. No Noise message is empty, so this is never valid.
    case emptyFrame
    /// A payload longer than `Frame.maxPayloadLength` cannot be framed.
    case payloadTooLarge(length: Int)

    public var description: String {
        switch self {
        case .emptyFrame:
            return "received a frame of length 0 (no Noise message is empty); closing the connection"
        case let .payloadTooLarge(length):
            return "a frame payload of \(length) bytes exceeds the limit of \(Frame.maxPayloadLength)"
        }
    }
}
