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

    /// Appends a `fileChunk` record (the same bytes as `append(.file(.chunk(...)))`) whose
    /// `length` data bytes `fill` writes straight into the pending buffer: the sender reads
    /// the source there, with no chunk array of its own and no copy of it into the stream. If
    /// `fill` throws, nothing of the record is appended.
    public mutating func appendFileChunk<E: Error>(
        _ transfer: TransferID, index: UInt64, length: Int,
        _ fill: (UnsafeMutableRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        precondition(length >= 0, "a negative byte count")
        let old = pending.count
        pending.append(AppRecord.RecordType.fileChunk.rawValue)
        pending.appendUInt32(UInt32(FileRecord.chunkHeaderLength + length))
        pending.append(contentsOf: transfer.bytes)
        pending.appendUInt64(index)
        do throws(E) {
            try UninitializedTail.append(length, to: &pending, fill)
        } catch {
            pending.removeSubrange(old...)
            throw error
        }
    }

    /// Capacity kept between flushes: a flush of a few file chunks (the node puts 4 per loop
    /// turn, 256 KiB, and a flush often carries more: chat, a pump restarted when the socket
    /// drained) reuses its buffer instead of growing a new one from nothing each time; a larger
    /// burst (a long room history) gives its memory back. 1 MiB, not 512 KiB: the array grows
    /// by doubling, so a fifth chunk left it just over 512 KiB, given back at the flush and
    /// grown again by the next (about 3 regrowths per flush in row 10i's profile, copying
    /// most sent bytes once more).
    public static let keptCapacity = 1 << 20

    /// The buffer's capacity, for the test that a flush of file chunks keeps it.
    var capacity: Int { pending.capacity }

    /// Hands the pending plaintext to `seal` in pieces of at most
    /// `WireLimits.maxPlaintextPerMessage` bytes, in order, each read where it lies (no copy
    /// per piece), then empties the buffer, also when `seal` throws (the session is over).
    public mutating func drain(_ seal: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        guard !pending.isEmpty else { return }
        defer { pending.removeAll(keepingCapacity: pending.capacity <= Self.keptCapacity) }
        try pending.withUnsafeBytes { all in
            var start = 0
            while start < all.count {
                let end = Swift.min(start + WireLimits.maxPlaintextPerMessage, all.count)
                try seal(UnsafeRawBufferPointer(rebasing: all[start..<end]))
                start = end
            }
        }
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

    /// Appends `count` bytes that `fill` writes straight into the buffer's free capacity: a
    /// transport message is decrypted where its plaintext will be read from, with no plaintext
    /// array of its own and no placeholder copy first (`UninitializedTail`). If `fill` throws,
    /// the buffer is as it was.
    public mutating func append<E: Error>(
        count: Int, _ fill: (UnsafeMutableRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        precondition(count >= 0, "a negative byte count")
        if readIndex > 0 && readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        }
        let old = buffer.count
        do throws(E) {
            try UninitializedTail.append(count, to: &buffer, fill)
        } catch {
            buffer.removeSubrange(old...)
            throw error
        }
    }

    /// The bytes not yet returned as records, for tests that check where `append` wrote.
    func withUnreadBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[readIndex...])) }
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
        readIndex = start + length
        if let feature = AppRecord.RecordType(rawValue: type)?.feature, !peerFeatures.contains(feature) {
            return .unknown(type: type, length: length)
        }
        // Decoded where it lies: the slice lives only during the decode, so the next append
        // does not copy the buffer.
        return try AppRecord.decode(type: type, payload: buffer[start..<start + length])
    }

    /// Consumed bytes are dropped (the rest moved to the front) only once this many have
    /// piled up, not after every record: a file chunk's record spans two transport messages,
    /// and moving its first part after each message copied nearly every byte once more.
    /// The buffer then holds at most this plus one record plus one message.
    public static let compactAfterBytes = 256 * 1024

    private mutating func compact() {
        if readIndex >= Self.compactAfterBytes || (readIndex > 0 && readIndex == buffer.count) {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
    }
}

/// `count` bytes written by `fill` straight into an array's uninitialized capacity.
/// `Array.append(contentsOf:)` reserves `underestimatedCount` more elements and hands their
/// uninitialized memory to the sequence's `_copyContents(initializing:)` (the standard
/// library's customization point for bulk initialization), so the bytes are written once,
/// where they stay. Array has no public uninitialized append; before this, a copy of the
/// ciphertext was appended as a placeholder and decrypted over: one more pass over every
/// received byte. If the array ever took another path (iterating instead), the append traps on
/// its "underestimatedCount was an overestimate" check rather than appending wrong bytes, and
/// `RecordStreamTests.testAppendDecryptsIntoTheBufferItself` fails first.
private struct UninitializedTail: Sequence {
    typealias Element = UInt8
    let count: Int
    /// Must leave all `count` bytes written, also when it fails.
    let fill: (UnsafeMutableRawBufferPointer) -> Void

    var underestimatedCount: Int { count }

    /// Appends `count` bytes that `fill` writes to `array`. If `fill` throws, the bytes it
    /// was given are zeroed (defined) and stay appended: the caller removes them, together
    /// with anything it appended before them, and rethrows.
    static func append<E: Error>(
        _ count: Int, to array: inout [UInt8], _ fill: (UnsafeMutableRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        var failure: E?
        withoutActuallyEscaping(fill) { fill in
            array.append(
                contentsOf: UninitializedTail(count: count) { out in
                    do throws(E) {
                        try fill(out)
                    } catch {
                        out.initializeMemory(as: UInt8.self, repeating: 0)
                        failure = error
                    }
                })
        }
        if let failure { throw failure }
    }

    /// Yields nothing: the bytes exist only through `_copyContents`.
    func makeIterator() -> EmptyCollection<UInt8>.Iterator { EmptyCollection<UInt8>().makeIterator() }

    func _copyContents(
        initializing destination: UnsafeMutableBufferPointer<UInt8>
    ) -> (EmptyCollection<UInt8>.Iterator, Int) {
        precondition(destination.count >= count, "the array reserved less than underestimatedCount")
        fill(UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(destination)[0..<count]))
        return (makeIterator(), count)
    }
}
