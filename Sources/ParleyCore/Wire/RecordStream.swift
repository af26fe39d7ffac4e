/// Turns records into Noise-message-sized plaintext chunks and back.
///
/// Sender: records are appended to a pending plaintext buffer; `drainChunks()` cuts
/// it into pieces of at most `WireLimits.maxPlaintextPerMessage` bytes, each of which
/// becomes one Noise transport message. Receiver: decrypted chunks are appended and
/// complete records come out. Neither side trusts a length: a record header that
/// announces more than `WireLimits.maxRecordBytes` is an error before any byte of
/// it is buffered.
public struct RecordStreamEncoder: Sendable {
    private var pending: [UInt8] = []

    public init() {}

    public var pendingByteCount: Int { pending.count }

    public mutating func append(_ record: AppRecord) {
        record.encode(into: &pending)
    }

    /// Plaintext chunks ready to encrypt, in order. Empties the buffer.
    public mutating func drainChunks() -> [[UInt8]] {
        guard !pending.isEmpty else { return [] }
        let max = WireLimits.maxPlaintextPerMessage
        if pending.count <= max {
            defer { pending.removeAll(keepingCapacity: true) }
            return [pending]
        }
        var chunks = [[UInt8]]()
        var start = 0
        while start < pending.count {
            let end = Swift.min(start + max, pending.count)
            chunks.append(Array(pending[start..<end]))
            start = end
        }
        pending.removeAll(keepingCapacity: false)
        return chunks
    }
}

public struct RecordStreamDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// What the sending peer announced in its handshake: records of an optional feature it
    /// did not announce are returned as `.unknown` (skipped), as a node without the
    /// feature would. Every feature by default (a decoder outside a session).
    public var peerFeatures: ProtocolFeatures

    public init(peerFeatures: ProtocolFeatures = .supported) { self.peerFeatures = peerFeatures }

    /// Bytes held waiting for the rest of a record: never more than one record's
    /// worth plus one chunk.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    public mutating func append(_ plaintext: [UInt8]) {
        if readIndex > 0 && readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        }
        buffer.append(contentsOf: plaintext)
    }

    /// The next complete record, nil if more bytes are needed.
    public mutating func next() throws(AppRecordError) -> AppRecord? {
        let available = buffer.count - readIndex
        guard available >= AppRecord.headerLength else {
            compact()
            return nil
        }
        let type = buffer[readIndex]
        let length =
            Int(buffer[readIndex + 1]) << 24 | Int(buffer[readIndex + 2]) << 16
            | Int(buffer[readIndex + 3]) << 8 | Int(buffer[readIndex + 4])
        guard length + AppRecord.headerLength <= WireLimits.maxRecordBytes else {
            throw .recordTooLarge(length + AppRecord.headerLength)
        }
        guard available >= AppRecord.headerLength + length else {
            compact()
            return nil
        }
        let start = readIndex + AppRecord.headerLength
        let payload = Array(buffer[start..<start + length])
        readIndex = start + length
        if let feature = AppRecord.RecordType(rawValue: type)?.feature, !peerFeatures.contains(feature) {
            return .unknown(type: type, length: length)
        }
        return try AppRecord.decode(type: type, payload: payload)
    }

    private mutating func compact() {
        if readIndex > 0 {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
    }
}
