/// The file records `0x30` ... `0x35` (docs/PROTOCOL.md "Files"): an offer, the
/// receiver's want (accept, resume, re-fetch), the chunk hash list, the chunks, the
/// receiver's durable progress, and the end of a transfer. Sent and read only on a
/// session whose peer announced `ProtocolFeatures.files`.
public enum FileRecord: Equatable, Sendable {
    case offer(FileOffer)
    case want(TransferID, from: UInt64, needList: Bool)
    case hashes(TransferID, first: UInt64, hashes: [[UInt8]])
    case chunk(TransferID, index: UInt64, data: [UInt8])
    case have(TransferID, verified: UInt64)
    case end(TransferID, FileEndOutcome, String)

    public var transfer: TransferID {
        switch self {
        case .offer(let o): return o.transfer
        case .want(let t, _, _), .hashes(let t, _, _), .chunk(let t, _, _), .have(let t, _), .end(let t, _, _):
            return t
        }
    }

    var recordType: AppRecord.RecordType {
        switch self {
        case .offer: return .fileOffer
        case .want: return .fileWant
        case .hashes: return .fileHashes
        case .chunk: return .fileChunk
        case .have: return .fileHave
        case .end: return .fileEnd
        }
    }

    /// A chunk's fields before its data: transfer id (16) and index (8).
    static let chunkHeaderLength = TransferID.length + 8

    /// The record's payload (without the 5-byte record header).
    func payload() -> [UInt8] {
        var p = [UInt8]()
        switch self {
        case .offer(let o):
            return o.encoded()
        case let .want(t, from, needList):
            p.append(contentsOf: t.bytes)
            p.appendUInt64(from)
            p.append(needList ? 1 : 0)
        case let .hashes(t, first, hashes):
            p.reserveCapacity(24 + hashes.count * FileHash.length)
            p.append(contentsOf: t.bytes)
            p.appendUInt64(first)
            for h in hashes { p.append(contentsOf: h) }
        case let .chunk(t, index, data):
            p.reserveCapacity(Self.chunkHeaderLength + data.count)
            p.append(contentsOf: t.bytes)
            p.appendUInt64(index)
            p.append(contentsOf: data)
        case let .have(t, verified):
            p.append(contentsOf: t.bytes)
            p.appendUInt64(verified)
        case let .end(t, outcome, text):
            p.append(contentsOf: t.bytes)
            p.append(outcome.rawValue)
            p.append(contentsOf: Array(text.utf8Prefix(maxBytes: FileLimits.maxEndTextBytes).utf8))
        }
        return p
    }

    /// Decodes the payload of a file record. Checks what the record alone can tell (layout,
    /// lengths, ranges); whether a chunk fits its transfer is the receiver's state machine's
    /// business (`IncomingTransfer`), which knows the offer.
    static func decode(_ type: AppRecord.RecordType, _ r: inout ByteReader) throws -> FileRecord {
        func fail(_ reason: String) -> AppRecordError { .malformed(type: type.rawValue, reason: reason) }
        switch type {
        case .fileOffer:
            return .offer(try FileOffer.decode(&r))
        case .fileWant:
            let t = TransferID(exactly: try r.readBytes(TransferID.length))
            let from = try r.readUInt64()
            let flag = try r.readUInt8()
            guard flag <= 1 else { throw fail("needList must be 0 or 1") }
            guard r.isAtEnd else { throw fail("trailing bytes") }
            return .want(t, from: from, needList: flag == 1)
        case .fileHashes:
            let t = TransferID(exactly: try r.readBytes(TransferID.length))
            let first = try r.readUInt64()
            let n = r.remaining / FileHash.length
            guard r.remaining % FileHash.length == 0, (1...FileLimits.maxHashesPerRecord).contains(n) else {
                throw fail("hash list of \(r.remaining) bytes")
            }
            guard first < FileLimits.maxChunks, first + UInt64(n) <= FileLimits.maxChunks else {
                throw fail("hash index beyond the chunk limit")
            }
            var hashes: [[UInt8]] = []
            hashes.reserveCapacity(n)
            for _ in 0..<n { hashes.append(try r.readBytes(FileHash.length)) }
            return .hashes(t, first: first, hashes: hashes)
        case .fileChunk:
            let t = TransferID(exactly: try r.readBytes(TransferID.length))
            let index = try r.readUInt64()
            guard index < FileLimits.maxChunks else { throw fail("chunk index \(index) beyond the chunk limit") }
            guard (1...FileLimits.maxChunkSize).contains(r.remaining) else {
                throw fail("chunk of \(r.remaining) bytes")
            }
            return .chunk(t, index: index, data: try r.readBytes(r.remaining))
        case .fileHave:
            let t = TransferID(exactly: try r.readBytes(TransferID.length))
            let verified = try r.readUInt64()
            guard verified <= FileLimits.maxChunks else { throw fail("verified count beyond the chunk limit") }
            guard r.isAtEnd else { throw fail("trailing bytes") }
            return .have(t, verified: verified)
        case .fileEnd:
            let t = TransferID(exactly: try r.readBytes(TransferID.length))
            let outcome = FileEndOutcome(rawValue: try r.readUInt8()) ?? .failed
            let text = try r.readBytes(min(r.remaining, FileLimits.maxEndTextBytes))
            guard r.isAtEnd else { throw fail("reason text over \(FileLimits.maxEndTextBytes) bytes") }
            return .end(t, outcome, String(decoding: text, as: UTF8.self))
        default:
            throw fail("not a file record")
        }
    }
}

/// How a transfer ended (`fileEnd`'s outcome byte). An unknown byte reads as `failed`.
public enum FileEndOutcome: UInt8, Sendable, Equatable, CaseIterable {
    case completed = 0
    case rejected = 1
    case cancelled = 2
    case failed = 3
}

extension String {
    /// The longest prefix of at most `maxBytes` bytes of UTF-8 that ends at a character boundary.
    func utf8Prefix(maxBytes: Int) -> String {
        if utf8.count <= maxBytes { return self }
        var cut = 0
        var end = startIndex
        for i in indices {
            let n = self[i].utf8.count
            if cut + n > maxBytes { break }
            cut += n
            end = index(after: i)
        }
        return String(self[startIndex..<end])
    }
}
