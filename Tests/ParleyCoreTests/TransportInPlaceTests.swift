import XCTest

@testable import ParleyCore

/// The zero-copy transport path a session uses (`PeerConnection`): records drained in
/// message-sized pieces and sealed straight into a send buffer, messages opened straight into
/// the record stream's buffer, file chunks decoded where they lie. Each must give exactly the
/// bytes and the failures of the array path beside it.
final class TransportInPlaceTests: XCTestCase {
    private func pair() throws -> (SessionTransport, SessionTransport) { try transportPair() }

    private func key() -> SecretBytes {
        var k = Sodium.randomBytes(32)
        return SecretBytes(consuming: &k)
    }

    private func sealAll(_ encoder: inout RecordStreamEncoder, _ t: inout SessionTransport) throws -> [[UInt8]] {
        var messages: [[UInt8]] = []
        try encoder.drain { piece in
            var out = [UInt8](repeating: 0xAA, count: piece.count + NoiseConstants.tagLength)
            try out.withUnsafeMutableBytes { try t.seal(piece, into: $0) }
            messages.append(out)
        }
        return messages
    }

    func testSealingIntoABufferGivesTheSameMessagesAsTheArrayPath() throws {
        var (a1, _) = try pair()
        var a2 = a1
        var e1 = RecordStreamEncoder()
        var e2 = RecordStreamEncoder()
        let records: [AppRecord] = (0..<5).map { i in
            .file(.chunk(TransferID.random(), index: UInt64(i), data: Sodium.randomBytes(65_536 - i)))
        }
        for r in records {
            e1.append(r)
            e2.append(r)
        }
        let viaArrays = try e1.drainChunks().map { try a1.seal($0) }
        let inPlace = try sealAll(&e2, &a2)
        XCTAssertEqual(inPlace, viaArrays)
        XCTAssertTrue(inPlace.allSatisfy { $0.count <= NoiseConstants.maxMessageLength })
        XCTAssertEqual(e2.pendingByteCount, 0)
        XCTAssertEqual(a2.messagesSent, a1.messagesSent)
    }

    /// A flush of a pump's chunks keeps the buffer for the next one instead of giving it back
    /// and growing it again (a copy of every sent byte, row 10i). A flush carries a turn's 4
    /// chunks and often more (chat, a pump that `connectionBecameWritable` restarted): at 5 the
    /// doubling array was just over 512 KiB, the old limit.
    func testAFlushOfAPumpsChunksKeepsTheBuffer() {
        var e = RecordStreamEncoder()
        let t = TransferID.random()
        for round in 0..<3 {
            for i in 0..<5 {
                e.append(.file(.chunk(t, index: UInt64(5 * round + i), data: Sodium.randomBytes(65_536))))
            }
            e.drain { _ in }
            XCTAssertEqual(e.pendingByteCount, 0)
            XCTAssertGreaterThanOrEqual(e.capacity, 5 * 65_565, "round \(round): the buffer was given back")
        }
    }

    func testDrainEmptiesTheBufferEvenWhenSealingFails() {
        struct Refused: Error {}
        var e = RecordStreamEncoder()
        e.append(.file(.chunk(TransferID.random(), index: 0, data: Sodium.randomBytes(100_000))))
        var pieces = 0
        XCTAssertThrowsError(
            try e.drain { _ in
                pieces += 1
                throw Refused()
            })
        XCTAssertEqual(pieces, 1)
        XCTAssertEqual(e.pendingByteCount, 0)
    }

    func testMessagesOpenedIntoTheDecoderGiveTheRecordsBack() throws {
        var (a, b) = try pair()
        var e = RecordStreamEncoder()
        let t = TransferID.random()
        let chunks = (0..<12).map { _ in Sodium.randomBytes(65_536) }
        for (i, c) in chunks.enumerated() { e.append(.file(.chunk(t, index: UInt64(i), data: c))) }
        e.append(.ping(7))
        var d = RecordStreamDecoder()
        var got: [AppRecord] = []
        for m in try sealAll(&e, &a) {
            try m.withUnsafeBytes { try b.open($0, into: &d) }
            while let r = try d.next() { got.append(r) }
        }
        XCTAssertEqual(got, chunks.enumerated().map { .file(.chunk(t, index: UInt64($0), data: $1)) } + [.ping(7)])
        XCTAssertEqual(d.bufferedByteCount, 0)
    }

    func testATamperedMessageLeavesTheDecoderAndTheNonceAsTheyWere() throws {
        var (a, b) = try pair()
        var e = RecordStreamEncoder()
        let t = TransferID.random()
        e.append(.ping(1))
        e.append(.file(.chunk(t, index: 0, data: Sodium.randomBytes(40_000))))
        e.append(.file(.chunk(t, index: 1, data: Sodium.randomBytes(40_000))))
        let messages = try sealAll(&e, &a)
        XCTAssertEqual(messages.count, 2)
        var d = RecordStreamDecoder()
        try messages[0].withUnsafeBytes { try b.open($0, into: &d) }
        XCTAssertEqual(try d.next(), .ping(1))
        guard case .file(.chunk(_, 0, _))? = try d.next() else { return XCTFail("no chunk 0") }
        XCTAssertNil(try d.next())
        let held = d.bufferedByteCount
        XCTAssertGreaterThan(held, 0, "the chunk's first part waits for the rest")
        var bad = messages[1]
        bad[bad.count / 2] ^= 1
        XCTAssertThrowsError(try bad.withUnsafeBytes { try b.open($0, into: &d) }) {
            XCTAssertEqual($0 as? NoiseError, .decryptionFailed)
        }
        XCTAssertEqual(d.bufferedByteCount, held)
        XCTAssertEqual(b.messagesReceived, 1)
        // Too short for a tag: refused before the decoder is touched.
        XCTAssertThrowsError(try [UInt8](repeating: 0, count: 15).withUnsafeBytes { try b.open($0, into: &d) })
        XCTAssertEqual(d.bufferedByteCount, held)
        // The genuine message still opens: nothing moved.
        try messages[1].withUnsafeBytes { try b.open($0, into: &d) }
        guard case .file(.chunk(_, 1, let data))? = try d.next() else { return XCTFail("no chunk 1") }
        XCTAssertEqual(data.count, 40_000)
    }

    func testCipherStateIntoBufferMatchesTheArrayPathAndRefusesWrongTags() throws {
        let key = key()
        var c1 = CipherState(key: key)
        var c2 = CipherState(key: key)
        let plaintext = Sodium.randomBytes(1_000)
        let viaArray = try c1.encrypt(ad: [1, 2], plaintext: plaintext)
        var inPlace = [UInt8](repeating: 0, count: 1_016)
        try plaintext.withUnsafeBytes { p in
            try inPlace.withUnsafeMutableBytes { try c2.encrypt(ad: [1, 2], plaintext: p, into: $0) }
        }
        XCTAssertEqual(inPlace, viaArray)
        XCTAssertEqual(c2.nonce, 1)

        var r = CipherState(key: key)
        var out = [UInt8](repeating: 0, count: 1_000)
        var forged = inPlace
        forged[0] ^= 1
        XCTAssertThrowsError(
            try forged.withUnsafeBytes { c in
                try out.withUnsafeMutableBytes { try r.decrypt(ad: [1, 2], ciphertext: c, into: $0) }
            })
        XCTAssertEqual(r.nonce, 0, "a forged message does not move the nonce")
        try inPlace.withUnsafeBytes { c in
            try out.withUnsafeMutableBytes { try r.decrypt(ad: [1, 2], ciphertext: c, into: $0) }
        }
        XCTAssertEqual(out, plaintext)
        XCTAssertEqual(r.nonce, 1)
        // Too long for one Noise message: refused, nothing written.
        let long = [UInt8](repeating: 0, count: NoiseConstants.maxMessageLength)
        var sink = [UInt8](repeating: 0, count: long.count + 16)
        XCTAssertThrowsError(
            try long.withUnsafeBytes { p in
                try sink.withUnsafeMutableBytes { try c2.encrypt(ad: [], plaintext: p, into: $0) }
            })
        XCTAssertEqual(c2.nonce, 1)
    }

    func testAChunkEncodedStraightIntoTheStreamIsTheRecordsOrdinaryEncoding() throws {
        let t = TransferID.random()
        let data = Sodium.randomBytes(3_000)
        let record = AppRecord.file(.chunk(t, index: 41, data: data))
        var header: [UInt8] = [AppRecord.RecordType.fileChunk.rawValue]
        header.appendUInt32(UInt32(FileRecord.chunk(t, index: 41, data: data).payload().count))
        XCTAssertEqual(record.encoded(), header + FileRecord.chunk(t, index: 41, data: data).payload())
        // And decoded from a slice of a larger buffer, as the stream does.
        let payload = Array(record.encoded().dropFirst(AppRecord.headerLength))
        let buffer = [9, 9, 9] + payload + [8, 8]
        XCTAssertEqual(
            try AppRecord.decode(
                type: AppRecord.RecordType.fileChunk.rawValue, payload: buffer[3..<(3 + payload.count)]),
            record)
    }

    func testTheDecoderCompactsOnlyAfterAQuarterMegabyteAndNeverLosesBytes() throws {
        // Records of 40,000 bytes fed in 65,519-byte pieces: boundaries never line up.
        var e = RecordStreamEncoder()
        let t = TransferID.random()
        let chunks = (0..<40).map { i in [UInt8](repeating: UInt8(i), count: 40_000) }
        for (i, c) in chunks.enumerated() { e.append(.file(.chunk(t, index: UInt64(i), data: c))) }
        var d = RecordStreamDecoder()
        var got: [[UInt8]] = []
        for piece in e.drainChunks() {
            d.append(piece)
            while case .file(.chunk(_, _, let data))? = try d.next() { got.append(data) }
            XCTAssertLessThan(d.bufferedByteCount, 40_000 + 64)
        }
        XCTAssertEqual(got, chunks)
    }

    /// `append(count:_:)` gives `fill` the decoder's own free capacity and nothing else (no
    /// placeholder to copy first): the bytes are written once, where the records are read from.
    /// A 64 KiB chunk's record, split across two transport messages, comes out whole.
    func testAppendWritesOnceIntoTheBufferAndAChunkSplitAcrossMessagesComesOutWhole() throws {
        struct Refused: Error {}
        var e = RecordStreamEncoder()
        let t = TransferID.random()
        let data = Sodium.randomBytes(65_536)
        e.append(.ping(1))
        e.append(.file(.chunk(t, index: 3, data: data)))
        var pieces: [[UInt8]] = []
        e.drain { pieces.append(Array($0)) }
        XCTAssertEqual(pieces.count, 2, "the chunk's record spans two transport messages")
        var d = RecordStreamDecoder()
        var got: [AppRecord] = []
        for piece in pieces {
            var written: UnsafeRawPointer?
            try d.append(count: piece.count) { (out: UnsafeMutableRawBufferPointer) throws(Refused) in
                XCTAssertEqual(out.count, piece.count)
                written = UnsafeRawPointer(out.baseAddress)
                piece.withUnsafeBytes { out.copyMemory(from: $0) }
            }
            d.withUnreadBytes { unread in
                XCTAssertEqual(
                    written, unread.baseAddress.map { $0 + unread.count - piece.count },
                    "fill wrote where the bytes stay, at the end of the unread bytes")
            }
            while let r = try d.next() { got.append(r) }
        }
        XCTAssertEqual(got, [.ping(1), .file(.chunk(t, index: 3, data: data))])
        XCTAssertEqual(d.bufferedByteCount, 0)
    }

    /// A `fill` that fails after writing part of its bytes leaves the decoder as it was: the
    /// record waiting for its rest still completes with the genuine bytes.
    func testAFailedAppendLeavesThePartialRecordAsItWas() throws {
        struct Refused: Error {}
        var e = RecordStreamEncoder()
        let t = TransferID.random()
        let data = Sodium.randomBytes(65_536)
        e.append(.file(.chunk(t, index: 0, data: data)))
        var pieces: [[UInt8]] = []
        e.drain { pieces.append(Array($0)) }
        var d = RecordStreamDecoder()
        try d.append(count: pieces[0].count) { (out: UnsafeMutableRawBufferPointer) throws(Refused) in
            pieces[0].withUnsafeBytes { out.copyMemory(from: $0) }
        }
        XCTAssertNil(try d.next())
        let held = d.bufferedByteCount
        XCTAssertThrowsError(
            try d.append(count: pieces[1].count) { (out: UnsafeMutableRawBufferPointer) throws(Refused) in
                out.initializeMemory(as: UInt8.self, repeating: 0xEE)
                throw Refused()
            })
        XCTAssertEqual(d.bufferedByteCount, held)
        try d.append(count: pieces[1].count) { (out: UnsafeMutableRawBufferPointer) throws(Refused) in
            pieces[1].withUnsafeBytes { out.copyMemory(from: $0) }
        }
        XCTAssertEqual(try d.next(), .file(.chunk(t, index: 0, data: data)))
    }

    /// The sender reads a chunk straight into the stream (`appendFileChunk`): the bytes queued
    /// are exactly those of `append(.file(.chunk(...)))`, whatever came before and after.
    func testAFileChunkFilledInPlaceEncodesAsTheRecordDoes() {
        let t = TransferID.random()
        let data = Sodium.randomBytes(65_536)
        var viaRecord = RecordStreamEncoder()
        var inPlace = RecordStreamEncoder()
        viaRecord.append(.ping(9))
        viaRecord.append(.file(.chunk(t, index: 41, data: data)))
        viaRecord.append(.file(.chunk(t, index: 42, data: Array(data[0..<100]))))
        inPlace.append(.ping(9))
        inPlace.appendFileChunk(t, index: 41, length: data.count) { out in
            data.withUnsafeBytes { out.copyMemory(from: $0) }
        }
        inPlace.appendFileChunk(t, index: 42, length: 100) { out in
            data.withUnsafeBytes { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<100])) }
        }
        var a: [[UInt8]] = []
        var b: [[UInt8]] = []
        viaRecord.drain { a.append(Array($0)) }
        inPlace.drain { b.append(Array($0)) }
        XCTAssertEqual(b, a)
        XCTAssertGreaterThan(b.count, 1)
    }

    /// A read that fails (the source shrank) leaves nothing of its record in the stream: the
    /// records before it leave intact and the session stays in step.
    func testAFailedFileChunkFillLeavesNothingQueued() {
        struct ShortRead: Error {}
        let t = TransferID.random()
        var e = RecordStreamEncoder()
        e.append(.ping(1))
        let before = e.pendingByteCount
        XCTAssertThrowsError(
            try e.appendFileChunk(t, index: 0, length: 65_536) {
                (out: UnsafeMutableRawBufferPointer) throws(ShortRead) in
                out.initializeMemory(as: UInt8.self, repeating: 0xEE)
                throw ShortRead()
            })
        XCTAssertEqual(e.pendingByteCount, before)
        e.append(.ping(2))
        var pieces: [[UInt8]] = []
        e.drain { pieces.append(Array($0)) }
        var d = RecordStreamDecoder()
        for p in pieces { d.append(p) }
        XCTAssertEqual(try d.next(), .ping(1))
        XCTAssertEqual(try d.next(), .ping(2))
        XCTAssertNil(try d.next())
    }
}
