/// A `fileOffer` (0x30): what the sender offers, with everything the receiver needs to
/// verify it (docs/PROTOCOL.md "Files"). Decoding enforces the limits of `FileLimits`;
/// a well-formed offer may still be refused by policy (too large for this receiver).
public struct FileOffer: Equatable, Sendable {
    public var transfer: TransferID
    public var size: UInt64
    public var chunkSize: UInt32
    /// BLAKE2b-256 of the whole file.
    public var contentHash: [UInt8]
    /// BLAKE2b-256 of the concatenated chunk hashes.
    public var listHash: [UInt8]
    /// The room the file was sent to; nil for a direct file.
    public var room: RoomID?
    /// The sender's name for the file (the receiver sanitizes it: `FileName`).
    public var name: String
    public var mediaType: String
    public var caption: String
    public var thumbnail: [UInt8]

    public init(
        transfer: TransferID, size: UInt64, chunkSize: UInt32, contentHash: [UInt8], listHash: [UInt8],
        room: RoomID? = nil, name: String, mediaType: String = "", caption: String = "", thumbnail: [UInt8] = []
    ) {
        self.transfer = transfer
        self.size = size
        self.chunkSize = chunkSize
        self.contentHash = contentHash
        self.listHash = listHash
        self.room = room
        self.name = name
        self.mediaType = mediaType
        self.caption = caption
        self.thumbnail = thumbnail
    }

    /// `ceil(size / chunkSize)`.
    public var chunkCount: UInt64 { Self.chunkCount(size: size, chunkSize: UInt64(chunkSize)) }

    public static func chunkCount(size: UInt64, chunkSize: UInt64) -> UInt64 {
        chunkSize == 0 ? 0 : size / chunkSize + (size % chunkSize == 0 ? 0 : 1)
    }

    /// The length of chunk `index` (the last one is shorter).
    public func chunkLength(_ index: UInt64) -> Int {
        let start = index * UInt64(chunkSize)
        return Int(min(UInt64(chunkSize), size - min(size, start)))
    }

    /// Why the offer breaks a limit, or nil. Used by the decoder and by a sender before it
    /// offers anything.
    public static func limitViolation(size: UInt64, chunkSize: UInt32) -> String? {
        guard chunkSize.nonzeroBitCount == 1,
            (FileLimits.minChunkSize...FileLimits.maxChunkSize).contains(Int(chunkSize))
        else { return "chunk size \(chunkSize) is not a power of two from 4096 to 65536" }
        guard size <= FileLimits.maxFileBytes else { return "size \(size) exceeds \(FileLimits.maxFileBytes) bytes" }
        guard chunkCount(size: size, chunkSize: UInt64(chunkSize)) <= FileLimits.maxChunks else {
            return "more than \(FileLimits.maxChunks) chunks"
        }
        return nil
    }

    /// Why a well-formed offer's hashes cannot be taken: the file's hash (`contentHash`) is
    /// the root of its hash tree, `listHash` (docs/PROTOCOL.md "Files"). A sender that puts
    /// another hash there (an older Parley put BLAKE2b of the whole file) would have its
    /// file checked against a hash the receiver never computes; refused, with the next step.
    public var hashViolation: String? {
        guard contentHash != listHash else { return nil }
        return "the sender's file hash is not the hash of its chunk list (an older Parley?); update it and send again"
    }

    func encoded() -> [UInt8] {
        var p = [UInt8]()
        p.append(contentsOf: transfer.bytes)
        p.appendUInt64(size)
        p.appendUInt32(chunkSize)
        p.append(contentsOf: contentHash)
        p.append(contentsOf: listHash)
        p.append(contentsOf: room?.bytes ?? [UInt8](repeating: 0, count: RoomID.length))
        let n = Array(name.utf8Prefix(maxBytes: FileLimits.maxNameBytes).utf8)
        p.appendUInt16(UInt16(n.count))
        p.append(contentsOf: n)
        let m = Array(mediaType.utf8.prefix(FileLimits.maxMediaTypeBytes))
        p.append(UInt8(m.count))
        p.append(contentsOf: m)
        let c = Array(caption.utf8Prefix(maxBytes: FileLimits.maxCaptionBytes).utf8)
        p.appendUInt16(UInt16(c.count))
        p.append(contentsOf: c)
        let th = Array(thumbnail.prefix(FileLimits.maxThumbnailBytes))
        p.appendUInt16(UInt16(th.count))
        p.append(contentsOf: th)
        return p
    }

    static func decode(_ r: inout ByteReader) throws -> FileOffer {
        func fail(_ reason: String) -> AppRecordError {
            .malformed(type: AppRecord.RecordType.fileOffer.rawValue, reason: reason)
        }
        let transfer = TransferID(exactly: try r.readBytes(TransferID.length))
        let size = try r.readUInt64()
        let chunkSize = try r.readUInt32()
        // A chunk size outside the rules is malformed; a size over the limit is well-formed
        // but refused by the receiver (it answers fileEnd failed), see `IncomingTransfer`.
        guard chunkSize.nonzeroBitCount == 1,
            (FileLimits.minChunkSize...FileLimits.maxChunkSize).contains(Int(chunkSize))
        else { throw fail("chunk size \(chunkSize)") }
        let contentHash = try r.readBytes(FileHash.length)
        let listHash = try r.readBytes(FileHash.length)
        let roomBytes = try r.readBytes(RoomID.length)
        let room = Sodium.isZero(roomBytes) ? nil : RoomID(exactly: roomBytes)
        let nameLength = Int(try r.readUInt16())
        guard (1...FileLimits.maxNameBytes).contains(nameLength) else { throw fail("name of \(nameLength) bytes") }
        guard let name = String(validating: try r.readBytes(nameLength), as: UTF8.self) else {
            throw fail("name is not UTF-8")
        }
        let mediaLength = Int(try r.readUInt8())
        guard mediaLength <= FileLimits.maxMediaTypeBytes else { throw fail("media type of \(mediaLength) bytes") }
        let media = try r.readBytes(mediaLength)
        guard media.allSatisfy({ (0x21...0x7E).contains($0) }) else { throw fail("media type is not printable ASCII") }
        let captionLength = Int(try r.readUInt16())
        guard captionLength <= FileLimits.maxCaptionBytes else { throw fail("caption of \(captionLength) bytes") }
        guard let caption = String(validating: try r.readBytes(captionLength), as: UTF8.self) else {
            throw fail("caption is not UTF-8")
        }
        let thumbLength = Int(try r.readUInt16())
        guard thumbLength <= FileLimits.maxThumbnailBytes else { throw fail("thumbnail of \(thumbLength) bytes") }
        let thumbnail = try r.readBytes(thumbLength)
        guard r.isAtEnd else { throw fail("trailing bytes") }
        return FileOffer(
            transfer: transfer, size: size, chunkSize: chunkSize, contentHash: contentHash, listHash: listHash,
            room: room, name: name, mediaType: String(decoding: media, as: UTF8.self), caption: caption,
            thumbnail: thumbnail)
    }
}
