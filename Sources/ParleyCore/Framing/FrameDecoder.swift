/// Splits a TCP byte stream into frames (see `Frame`).
///
/// Feed it whatever arrived with `append`, then call `next()` until it returns nil.
/// It never trusts a length: it allocates nothing on the strength of a header, only
/// stores bytes that actually arrived, and returns a frame once all its bytes are here.
///
/// Memory bound: once `next()` has returned nil, at most one incomplete frame is
/// buffered, so `bufferedByteCount <= Frame.headerLength + Frame.maxPayloadLength - 1`
/// (65536). Between an `append` and the draining calls to `next()` the buffer also holds
/// what that `append` added, so callers bound it by bounding their reads.
///
/// Errors are sticky: after `next()` throws, the stream is out of step and every later
/// call throws the same error. The connection must be closed.
public struct FrameDecoder: Sendable {
    private var buffer: [UInt8] = []
    /// Index of the first unconsumed byte; consumed bytes are dropped in bulk (see `compact`).
    private var start = 0
    private var failure: FrameError?

    public init() {}

    /// Bytes received but not yet returned as frames.
    public var bufferedByteCount: Int { buffer.count - start }

    public mutating func append(_ bytes: some Sequence<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete payload, or nil if more bytes are needed.
    public mutating func next() throws(FrameError) -> [UInt8]? {
        if let failure { throw failure }
        let scan = buffer.withUnsafeBytes { Self.scan(UnsafeRawBufferPointer(rebasing: $0[start...])) }
        switch scan {
        case .needMoreBytes:
            return nil
        case .invalid(let error):
            failure = error
            throw error
        case .frame(let payload):
            let frame = Array(buffer[(start + payload.lowerBound)..<(start + payload.upperBound)])
            start += payload.upperBound
            compact()
            return frame
        }
    }

    /// What the start of a byte stream holds: the whole parsing rule of a frame, with no
    /// state and no copy. `next()` is built on it, and so is the daemon's NIO handler
    /// (`NoiseFrameDecoder`), which scans NIO's own receive buffer: one parser for the
    /// unit tests, the fuzz target and production.
    public enum Scan: Equatable, Sendable {
        /// The header, or part of the payload it announces, has not arrived yet.
        case needMoreBytes
        /// A complete frame: its payload is `bytes[payload]`; the frame ends at
        /// `payload.upperBound`, where the next one begins.
        case frame(payload: Range<Int>)
        /// The stream is out of step (a zero length); the connection must be closed.
        case invalid(FrameError)
    }

    /// Scans the first frame of `bytes` (which start at a frame boundary). It trusts no
    /// length: a header only says how many bytes to wait for, never what to allocate.
    public static func scan(_ bytes: UnsafeRawBufferPointer) -> Scan {
        guard bytes.count >= Frame.headerLength else { return .needMoreBytes }
        let length = Int(bytes[0]) << 8 | Int(bytes[1])
        guard length >= Frame.minPayloadLength else { return .invalid(.emptyFrame) }
        guard bytes.count >= Frame.headerLength + length else { return .needMoreBytes }
        return .frame(payload: Frame.headerLength..<(Frame.headerLength + length))
    }

    /// Drops consumed bytes once they are at least half the buffer, so a long-lived
    /// connection does not keep every byte it ever received, and each byte is moved
    /// O(1) times on average.
    private mutating func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
    }
}
