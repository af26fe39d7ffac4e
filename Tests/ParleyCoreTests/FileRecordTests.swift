import XCTest

@testable import ParleyCore

/// The file records (docs/PROTOCOL.md "Files"): round trips, every limit, hostile layouts,
/// and the receiver's name sanitizing.
final class FileRecordTests: XCTestCase {
    private func offer(size: UInt64 = 10_000, chunkSize: UInt32 = 4_096, name: String = "report.pdf") -> FileOffer {
        FileOffer(
            transfer: TransferID(exactly: Array(repeating: 7, count: 16)), size: size, chunkSize: chunkSize,
            contentHash: Array(repeating: 1, count: 32), listHash: Array(repeating: 2, count: 32),
            room: RoomID(exactly: Array(repeating: 3, count: 16)), name: name, mediaType: "application/pdf",
            caption: "the figures", thumbnail: [0xFF, 0xD8])
    }

    private func roundTrip(_ record: AppRecord) throws -> AppRecord {
        var decoder = RecordStreamDecoder()
        decoder.append(record.encoded())
        return try XCTUnwrap(try decoder.next())
    }

    private func decode(_ type: AppRecord.RecordType, _ payload: [UInt8]) throws(AppRecordError) -> AppRecord {
        try AppRecord.decode(type: type.rawValue, payload: payload)
    }

    func testEveryRecordRoundTrips() throws {
        let t = TransferID.random()
        let records: [AppRecord] = [
            .file(.offer(offer())),
            .file(
                .offer(
                    FileOffer(
                        transfer: t, size: 0, chunkSize: 65_536, contentHash: FileHash.listHash([]),
                        listHash: FileHash.listHash([]),
                        name: "empty"))),
            .file(.want(t, from: 5, needList: true)), .file(.want(t, from: 0, needList: false)),
            .file(.hashes(t, first: 2, hashes: [Array(repeating: 9, count: 32), Array(repeating: 8, count: 32)])),
            .file(.chunk(t, index: 3, data: [1, 2, 3])), .file(.have(t, verified: 64)),
            .file(.end(t, .completed, "")), .file(.end(t, .failed, "the source file changed"))
        ]
        for r in records { XCTAssertEqual(try roundTrip(r), r) }
    }

    func testTheOfferLayoutIsTheDocumentedOne() {
        let o = offer(size: 0x0102, chunkSize: 4_096, name: "a")
        let p = AppRecord.file(.offer(o)).encoded()
        XCTAssertEqual(p[0], 0x30)
        var expected = [UInt8](repeating: 7, count: 16)
        expected += [0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0x10, 0]
        expected += [UInt8](repeating: 1, count: 32) + [UInt8](repeating: 2, count: 32)
        expected += [UInt8](repeating: 3, count: 16)
        expected += [0, 1, 0x61, 15] + Array("application/pdf".utf8) + [0, 11] + Array("the figures".utf8)
        expected += [0, 2, 0xFF, 0xD8]
        XCTAssertEqual(Array(p[5...]), expected)
        XCTAssertEqual(Int(p[1]) << 24 | Int(p[2]) << 16 | Int(p[3]) << 8 | Int(p[4]), expected.count)
    }

    func testAnOfferWithAChunkSizeOutsideTheRulesIsMalformed() {
        for size: UInt32 in [0, 1_024, 5_000, 131_072, 65_535] {
            let bytes = Array(AppRecord.file(.offer(offer(chunkSize: size))).encoded()[5...])
            XCTAssertThrowsError(try decode(.fileOffer, bytes), "chunk size \(size)")
        }
    }

    func testAnOversizedOfferIsWellFormedButBreaksTheLimit() throws {
        let huge = offer(size: 1 << 63)
        XCTAssertEqual(try roundTrip(.file(.offer(huge))), .file(.offer(huge)))
        XCTAssertNotNil(FileOffer.limitViolation(size: 1 << 63, chunkSize: 65_536))
        XCTAssertNotNil(FileOffer.limitViolation(size: FileLimits.maxFileBytes + 1, chunkSize: 65_536))
        XCTAssertNotNil(FileOffer.limitViolation(size: FileLimits.maxFileBytes, chunkSize: 4_096), "too many chunks")
        XCTAssertNil(FileOffer.limitViolation(size: FileLimits.maxFileBytes, chunkSize: 65_536))
    }

    func testHostileOfferLayoutsAreMalformed() {
        let good = Array(AppRecord.file(.offer(offer())).encoded()[5...])
        XCTAssertThrowsError(try decode(.fileOffer, good + [0]), "trailing byte")
        XCTAssertThrowsError(try decode(.fileOffer, Array(good.dropLast())), "truncated")
        var emptyName = good
        emptyName[124] = 0
        emptyName[125] = 0
        XCTAssertThrowsError(try decode(.fileOffer, emptyName))
        var longName = good
        longName[124] = 0xFF
        longName[125] = 0xFF
        XCTAssertThrowsError(try decode(.fileOffer, longName), "a name length beyond the payload")
        var badUTF8 = good
        badUTF8[126] = 0xC0
        XCTAssertThrowsError(try decode(.fileOffer, badUTF8))
        var badMedia = good
        badMedia[128] = 0x0A  // a newline in the media type
        XCTAssertThrowsError(try decode(.fileOffer, badMedia))
    }

    func testHostileChunkWantHashesHaveAndEndLayouts() {
        let t = [UInt8](repeating: 4, count: 16)
        XCTAssertThrowsError(try decode(.fileChunk, t + [0, 0, 0, 0, 0, 0, 0, 0]), "an empty chunk")
        XCTAssertThrowsError(
            try decode(.fileChunk, t + [0, 0, 0, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 65_537)),
            "a chunk over the largest chunk size")
        XCTAssertThrowsError(try decode(.fileChunk, t + [0, 0, 0, 0, 0, 4, 0, 0, 1]), "an index past the chunk limit")
        XCTAssertThrowsError(try decode(.fileWant, t + [0, 0, 0, 0, 0, 0, 0, 0, 2]), "needList 2")
        XCTAssertThrowsError(try decode(.fileWant, t + [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), "trailing byte")
        XCTAssertThrowsError(try decode(.fileHashes, t + [0, 0, 0, 0, 0, 0, 0, 0]), "no hash")
        XCTAssertThrowsError(try decode(.fileHashes, t + [0, 0, 0, 0, 0, 0, 0, 0] + [1]), "part of a hash")
        XCTAssertThrowsError(
            try decode(.fileHashes, t + [0, 0, 0, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 32 * 2_049)),
            "more than 2048 hashes")
        XCTAssertThrowsError(
            try decode(.fileHashes, t + [0, 0, 0, 0, 0, 4, 0, 0] + [UInt8](repeating: 0, count: 32)),
            "hashes past the chunk limit")
        XCTAssertThrowsError(try decode(.fileHave, t + [0, 0, 0, 0, 0, 4, 0, 1]), "more than the chunk limit")
        XCTAssertThrowsError(
            try decode(.fileEnd, t + [3] + [UInt8](repeating: 0x41, count: 201)), "a reason over 200 bytes")
        XCTAssertEqual(try? decode(.fileEnd, t + [77]), .file(.end(TransferID(exactly: t), .failed, "")))
    }

    func testFileRecordsFromAPeerWithoutTheFeatureAreSkipped() throws {
        var decoder = RecordStreamDecoder(peerFeatures: [.conversation])
        decoder.append(AppRecord.file(.have(.random(), verified: 1)).encoded())
        guard case .unknown(let type, _)? = try decoder.next() else { return XCTFail("not skipped") }
        XCTAssertEqual(type, 0x34)
        XCTAssertTrue(ProtocolFeatures.supported.contains(.files))
        XCTAssertEqual(ProtocolFeatures.files.rawValue, 1 << 1)
    }

    func testTheChunkCountAndLengths() {
        let o = offer(size: 10_000, chunkSize: 4_096)
        XCTAssertEqual(o.chunkCount, 3)
        XCTAssertEqual(
            [o.chunkLength(0), o.chunkLength(1), o.chunkLength(2), o.chunkLength(3)], [4_096, 4_096, 1_808, 0])
        XCTAssertEqual(offer(size: 8_192).chunkCount, 2)
        XCTAssertEqual(offer(size: 0).chunkCount, 0)
    }

    func testTheHashIsBLAKE2b256() {
        // BLAKE2b-256 of "abc" (RFC 7693 test vectors are for 512; this one is from b2sum -l 256).
        XCTAssertEqual(
            Sodium.hex(FileHash.of(Array("abc".utf8))),
            "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319")
        let h = FileHash()
        h.update(Array("a".utf8))
        h.update(Array("bc".utf8))
        XCTAssertEqual(h.finish(), FileHash.of(Array("abc".utf8)), "streaming equals one shot")
    }

    // MARK: Names

    func testNamesLoseTheirDirectoriesAndDots() {
        XCTAssertEqual(FileName.sanitize("../../etc/passwd"), "passwd")
        XCTAssertEqual(FileName.sanitize("..\\..\\windows\\system.ini"), "system.ini")
        XCTAssertEqual(FileName.sanitize(".."), "file")
        XCTAssertEqual(FileName.sanitize("."), "file")
        XCTAssertEqual(FileName.sanitize("/"), "file")
        XCTAssertEqual(FileName.sanitize(".bashrc"), "bashrc")
        XCTAssertEqual(FileName.sanitize("  report.pdf. "), "report.pdf")
    }

    func testNamesLoseControlAndBidiCharacters() {
        XCTAssertEqual(FileName.sanitize("a\u{1B}[31mb\nc\u{0}d\u{7F}e\u{85}f"), "a[31mbcdef")
        XCTAssertEqual(FileName.sanitize("photo\u{202E}gpj.exe"), "photogpj.exe")
        XCTAssertEqual(FileName.sanitize("a:b*c?d\"e<f>g|h"), "abcdefgh")
    }

    func testDeviceNamesArePrefixed() {
        XCTAssertEqual(FileName.sanitize("CON"), "file-CON")
        XCTAssertEqual(FileName.sanitize("nul.txt"), "file-nul.txt")
        XCTAssertEqual(FileName.sanitize("com1.tar.gz"), "file-com1.tar.gz")
        XCTAssertEqual(FileName.sanitize("console.txt"), "console.txt")
    }

    func testLongNamesAreCutKeepingTheExtension() {
        let long = String(repeating: "é", count: 300) + ".pdf"
        let cut = FileName.sanitize(long)
        XCTAssertLessThanOrEqual(cut.utf8.count, FileLimits.maxStoredNameBytes)
        XCTAssertTrue(cut.hasSuffix("é.pdf"))
    }

    func testTakenNamesGetANumber() {
        XCTAssertEqual(FileName.numbered("report.pdf", 1), "report (1).pdf")
        XCTAssertEqual(FileName.numbered("archive", 2), "archive (2)")
        XCTAssertEqual(FileName.numbered("report.pdf", 0), "report.pdf")
    }

    // MARK: The file's hash

    /// The file's hash is the hash of its chunk hashes (docs/PROTOCOL.md "Files"): the same
    /// value from `ofFile` whatever the reader hands back per call, and not BLAKE2b of the
    /// whole file (which an older Parley sent, and `hashViolation` refuses).
    func testTheFileHashIsTheHashOfTheChunkHashList() throws {
        let data = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let chunks = stride(from: 0, to: data.count, by: 4_096).map { Array(data[$0..<min($0 + 4_096, data.count)]) }
        let expected = FileHash.listHash(chunks.map { FileHash.of($0) })
        // A reader that returns at most 1,000 bytes per call: the loop must fill each chunk.
        let tree = try XCTUnwrap(
            FileHash.ofFile(size: UInt64(data.count), chunkSize: 4_096) { buffer, offset in
                let n = min(buffer.count, 1_000, data.count - Int(offset))
                for i in 0..<n { buffer[i] = data[Int(offset) + i] }
                return n
            })
        XCTAssertEqual(tree.fileHash, expected)
        XCTAssertEqual(tree.chunkHashes.count, 3)
        XCTAssertNotEqual(tree.fileHash, FileHash.of(data))
        // A file that ends early (the reader returns 0) has no hash.
        XCTAssertNil(FileHash.ofFile(size: 20_000, chunkSize: 4_096) { _, offset in offset < 10_000 ? 1 : 0 })
        XCTAssertEqual(FileHash.ofFile(size: 0, chunkSize: 4_096) { _, _ in 0 }?.fileHash, FileHash.listHash([]))
    }

    func testAnOfferWhoseFileHashIsNotItsListHashIsRefused() {
        var o = offer()
        XCTAssertNotNil(o.hashViolation)
        XCTAssertTrue(o.hashViolation?.contains("update") == true)
        o.contentHash = o.listHash
        XCTAssertNil(o.hashViolation)
    }
}
