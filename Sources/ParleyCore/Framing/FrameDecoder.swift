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
        guard bufferedByteCount >= Frame.headerLength else { return nil }
        let length = Int(buffer[start]) << 8 | Int(buffer[start + 1])
        guard length >= Frame.minPayloadLength else {
            failure = .emptyFrame
            throw .emptyFrame
        }
        guard bufferedByteCount >= Frame.headerLength + length else { return nil }
        let payloadStart = start + Frame.headerLength
        let payload = Array(buffer[payloadStart..<(payloadStart + length)])
        start = payloadStart + length
        compact()
        return payload
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
