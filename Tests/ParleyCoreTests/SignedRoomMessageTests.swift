import XCTest

@testable import ParleyCore

/// Signed room messages, summaries and sequence ranges (issue 30, docs/PROTOCOL.md
/// "Room sync"): the receiver checks the author, not whoever handed the message over.
final class SignedRoomMessageTests: XCTestCase {
    let alice = ExampleKeys.aliceIdentity
    let bob = ExampleKeys.bobIdentity
    let room = RoomID(exactly: Array(0xa0...0xaf))
    let head = RoomOperationHash(exactly: Array(repeating: 0x33, count: 32))

    func message(_ body: String = "hi lab", sequence: UInt64 = 1, replyTo: MessageID? = nil) throws
        -> SignedRoomMessage
    {
        try SignedRoomMessage.sign(
            roomID: room, roomSequence: sequence, id: MessageID(exactly: Array(0x00...0x0f)),
            createdAt: 1_767_225_600_000, anchor: [head], replyTo: replyTo, body: body, by: alice)
    }

    func testASignedMessageDecodesToItselfWithItsAuthor() throws {
        for m in [try message(), try message("", sequence: 7, replyTo: MessageID(exactly: Array(0x10...0x1f)))] {
            let back = try SignedRoomMessage.decode(m.encoded())
            XCTAssertEqual(back, m)
            XCTAssertEqual(back.author, alice.publicKey)
            XCTAssertEqual(try AppRecord.decode(type: 0x16, payload: m.encoded()), .roomMessage(.verified(m)))
        }
    }

    /// Any byte a forwarder changes (room, author, sequence, id, time, anchor, body) breaks
    /// the author's signature; the record still decodes, as a message to refuse, so one bad
    /// message does not cost the session.
    func testEveryAlteredByteIsRefusedAsABadSignatureNotAProtocolError() throws {
        let good = try message().encoded()
        let authorRange = 18..<50
        for i in 1..<good.count where !authorRange.contains(i) {
            var bad = good
            bad[i] ^= 0x01
            if i == 1 { continue }  // the kind byte: another layout, a structural error
            do {
                _ = try SignedRoomMessage.decode(bad)
                XCTFail("byte \(i) altered and still accepted")
            } catch .badSignature(_, let author, _) {
                XCTAssertEqual(author, alice.publicKey)
            } catch .invalidUTF8 {
                // The body byte flipped into invalid UTF-8: refused before the signature.
            } catch .invalidAnchor, .invalidSequence {
                // An anchor count or order, or a zero sequence: refused structurally.
            } catch {
                XCTFail("byte \(i): \(error)")
            }
        }
        var forged = good
        forged[forged.count - 1] ^= 0x80
        guard case .roomMessage(.badSignature(let r, let a, _)) = try AppRecord.decode(type: 0x16, payload: forged)
        else { return XCTFail("a bad signature must decode as a message to refuse") }
        XCTAssertEqual(r, room)
        XCTAssertEqual(a, alice.publicKey)
    }

    /// Claiming someone else wrote it: Bob's signature under Alice's key does not verify.
    func testAMessageSignedByAnotherKeyUnderTheAuthorsNameIsRefused() throws {
        var bytes = try message().encoded()
        let signed = Array(bytes.dropLast(64))
        bytes = signed + bob.sign(SignedRoomMessage.signatureDomain + signed)
        XCTAssertThrowsError(try SignedRoomMessage.decode(bytes)) { error in
            guard case SignedRoomMessageError.badSignature = error else { return XCTFail("\(error)") }
        }
        // And a signature over the same bytes without the domain prefix (another kind of
        // statement by Alice) is not a room-message signature.
        let undomained = signed + alice.sign(signed)
        XCTAssertThrowsError(try SignedRoomMessage.decode(undomained))
    }

    /// Edits, deletes and reactions in rooms are signed like messages, under their own
    /// domain: a forwarder passes them on, the receiver checks the author.
    func testSignedChangesRoundTripUnderTheirOwnDomain() throws {
        let target = MessageID(exactly: Array(0x40...0x4f))
        let reaction = try Reaction("👍")
        for (i, action) in [
            MessageActionRecord.Action.edit(body: "fixed"), .delete, .reaction(reaction, added: true),
            .reaction(reaction, added: false)
        ].enumerated() {
            let c = try SignedRoomMessage.signChange(
                action, of: target, roomID: room, roomSequence: UInt64(2 + i), id: .random(), createdAt: 5,
                anchor: [head], by: alice)
            let back = try SignedRoomMessage.decode(c.encoded())
            XCTAssertEqual(back, c)
            XCTAssertEqual(back.target, target)
            XCTAssertEqual(back.action, action)
            XCTAssertTrue(back.kind.isChange)
            // The same bytes signed under the message domain are not a change signature.
            let signed = Array(c.encoded().dropLast(64))
            XCTAssertThrowsError(
                try SignedRoomMessage.decode(signed + alice.sign(SignedRoomMessage.signatureDomain + signed))
            ) { error in
                guard case SignedRoomMessageError.badSignature = error else { return XCTFail("\(error)") }
            }
            // Bob cannot sign Alice's edit.
            XCTAssertThrowsError(
                try SignedRoomMessage.decode(signed + bob.sign(SignedRoomMessage.changeSignatureDomain + signed)))
        }
        // A message's signature does not make it a change: kind byte 1 -> 3 breaks it.
        let del = try SignedRoomMessage.signChange(
            .delete, of: target, roomID: room, roomSequence: 9, id: .random(), createdAt: 5, anchor: [head], by: alice)
        var withText = Array(del.encoded().dropLast(64)) + Array("x".utf8)
        withText += alice.sign(SignedRoomMessage.changeSignatureDomain + withText)
        XCTAssertThrowsError(try SignedRoomMessage.decode(withText)) { error in
            XCTAssertEqual(error as? SignedRoomMessageError, .invalidChange("a delete carries no text"))
        }
    }

    func testStructuralRulesAreProtocolErrors() throws {
        let good = try message().encoded()
        XCTAssertThrowsError(try AppRecord.decode(type: 0x16, payload: Array(good.prefix(40))))
        var v2 = good
        v2[0] = 2
        XCTAssertThrowsError(try AppRecord.decode(type: 0x16, payload: v2))
        var kind = good
        kind[1] = 6  // unknown
        XCTAssertThrowsError(try AppRecord.decode(type: 0x16, payload: kind))
        XCTAssertThrowsError(
            try SignedRoomMessage.sign(
                roomID: room, roomSequence: 0, id: .random(), createdAt: 0, anchor: [head], body: "x", by: alice))
        XCTAssertThrowsError(
            try SignedRoomMessage.sign(
                roomID: room, roomSequence: 1, id: .random(), createdAt: 0, anchor: [], body: "x", by: alice))
    }

    func testTheDomainIsDistinctFromEveryOtherSignedStatement() {
        let prefixes = [
            Card.signatureDomain, RoomOperation.signatureDomain, SignedAddressRecord.signatureDomain,
            SignedRoomMessage.signatureDomain, SignedRoomMessage.changeSignatureDomain
        ]
        for (i, a) in prefixes.enumerated() {
            for (j, b) in prefixes.enumerated() where i != j {
                XCTAssertFalse(b.starts(with: a), "\(Sodium.hex(a)) is a prefix of \(Sodium.hex(b))")
            }
        }
    }

    func testSequenceRangesMergeAndSubtract() {
        var r = SequenceRanges()
        for n: UInt64 in [5, 1, 2, 3, 9, 4, 11] { r.insert(n) }
        XCTAssertEqual(r.ranges, [1...5, 9...9, 11...11])
        r.insert(10)
        XCTAssertEqual(r.ranges, [1...5, 9...11])
        XCTAssertTrue(r.contains(10))
        XCTAssertFalse(r.contains(6))
        XCTAssertEqual(r.count, 8)
        let other = SequenceRanges([2...3, 10...20])
        XCTAssertEqual(r.subtracting(other, limit: 100), [1, 4, 5, 9])
        XCTAssertEqual(r.subtracting(other, limit: 2), [1, 4])
        XCTAssertEqual(SequenceRanges([1...10_000]).subtracting(SequenceRanges([1...10_000]), limit: 10), [])
        XCTAssertEqual(
            SequenceRanges([1...10_000]).subtracting(SequenceRanges([1...9_998]), limit: 10), [9_999, 10_000])
    }

    func testAHaveRoundTripsAndClaimsNoMoreThanIsHeld() throws {
        let many = SequenceRanges([1...1, 3...3, 5...5, 7...7, 9...9])
        let have = RoomHave(roomID: room, holding: [alice.publicKey: many, bob.publicKey: SequenceRanges([1...40])])
        XCTAssertEqual(have.authors[alice.publicKey]?.ranges, [1...1, 3...3, 5...5, 7...7], "the lowest four")
        let back = try RoomHave.decode(have.encoded()[...])
        XCTAssertEqual(back, have)
        XCTAssertEqual(try AppRecord.decode(type: 0x17, payload: have.encoded()), .roomHave(have))
    }

    func testAMalformedHaveIsAProtocolError() throws {
        let have = RoomHave(roomID: room, holding: [alice.publicKey: SequenceRanges([1...4])])
        let good = have.encoded()
        func variant(_ f: (inout [UInt8]) -> Void) -> [UInt8] {
            var b = good
            f(&b)
            return b
        }
        let rangeStart = 16 + 2 + 32 + 1
        for bad in [
            Array(good.dropLast()),  // truncated
            good + [0],  // trailing
            variant { $0[rangeStart + 7] = 0 },  // first = 0
            variant { $0[rangeStart + 7] = 9 },  // first > last
            variant { $0[16 + 2 + 32] = 0 },  // no ranges
            variant { $0[16 + 2 + 32] = 5 }  // too many ranges
        ] {
            XCTAssertThrowsError(try AppRecord.decode(type: 0x17, payload: bad))
        }
        // Two touching ranges are one: a second encoding of the same set is refused.
        var touching = Array(good.prefix(16 + 2 + 32))
        touching.append(2)
        for (f, l): (UInt64, UInt64) in [(1, 2), (3, 4)] {
            touching.appendUInt64(f)
            touching.appendUInt64(l)
        }
        XCTAssertThrowsError(try RoomHave.decode(touching[...]))
    }
}

/// The room sync examples of docs/PROTOCOL.md ("Room sync"), from the inputs it states.
final class RoomSyncDocExampleTests: XCTestCase {
    func testRoomMessageAndHaveExamples() throws {
        let alice = ExampleKeys.aliceIdentity
        let carol = try IdentityKeyPair(seed: ExampleKeys.seed(from: 0x60))
        let create = try RoomOperation.create(
            name: "lab", members: [ExampleKeys.bobIdentity.publicKey], by: alice, createdAt: 1_767_225_600_000,
            nonce: RoomID(bytes: Array(0xa0...0xaf))!)  // 16 bytes by construction
        let join = try RoomOperation.change(
            .join, roomID: create.roomID, after: [create], by: ExampleKeys.bobIdentity, createdAt: 1_767_225_660_000)
        let m = try SignedRoomMessage.sign(
            roomID: create.roomID, roomSequence: 1, id: MessageID(exactly: Array(0x00...0x0f)),
            createdAt: 1_767_225_660_000, anchor: [join.hash], body: "hi lab", by: alice)
        XCTAssertEqual(
            Sodium.hex(AppRecord.roomMessage(.verified(m)).encoded()), try ProtocolDoc.hexExample("room-message-record")
        )
        let have = RoomHave(
            roomID: create.roomID,
            holding: [alice.publicKey: SequenceRanges([1...3]), carol.publicKey: SequenceRanges([1...1, 4...5])])
        XCTAssertEqual(Sodium.hex(AppRecord.roomHave(have).encoded()), try ProtocolDoc.hexExample("room-have-record"))
    }
}
