import ParleyCore
import XCTest

final class CardTests: XCTestCase {
    let identity = ExampleKeys.aliceIdentity
    let noise = ExampleKeys.aliceNoise.publicKey

    // MARK: - Helpers

    /// Builds card bytes field by field, as docs/PROTOCOL.md describes them, and signs them
    /// with a valid signature: decode failures then come from the field, not the signature.
    func rawCard(
        version: UInt8 = 1, name: [UInt8] = Array("Alice".utf8), host: [UInt8] = Array("h.local".utf8),
        nameLength: UInt8? = nil, hostLength: UInt8? = nil,
        issuedAt: UInt64 = 100, sequence: UInt64 = 7, expiresAt: UInt64 = 0
    ) -> [UInt8] {
        var body: [UInt8] = [version]
        body += identity.publicKey.bytes
        body += noise.bytes
        body.append(nameLength ?? UInt8(name.count))
        body += name
        body.append(hostLength ?? UInt8(host.count))
        body += host
        for v in [issuedAt, sequence, expiresAt] {
            body += (0..<8).map { UInt8(truncatingIfNeeded: v >> UInt64(56 - 8 * $0)) }
        }
        return body + identity.sign(Array("parley-card-v1\0".utf8) + body)
    }

    func assertDecodeFails(_ bytes: [UInt8], _ expected: CardError, file: StaticString = #filePath, line: UInt = #line)
    {
        XCTAssertThrowsError(try Card.decode(bytes), file: file, line: line) { error in
            XCTAssertEqual(error as? CardError, expected, file: file, line: line)
        }
    }

    func assertIssueFails(
        name: String = "Alice", host: String = "h.local", issuedAt: UInt64 = 100,
        expiresAt: UInt64? = nil, _ expected: CardError,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(
            try Card.issue(
                identity: identity, noiseKey: noise, displayName: name, hostName: host,
                issuedAt: issuedAt, sequence: 1, expiresAt: expiresAt),
            file: file, line: line
        ) { error in
            XCTAssertEqual(error as? CardError, expected, file: file, line: line)
        }
    }

    // MARK: - Round trips

    func testRawBuilderProducesAValidCard() throws {
        // Guards the rejection tests below: with valid fields the hand-built bytes decode.
        let card = try Card.decode(rawCard())
        XCTAssertEqual(card.displayName, "Alice")
        XCTAssertEqual(card.hostName, "h.local")
        XCTAssertEqual(card.sequence, 7)
        XCTAssertNil(card.expiresAt)
    }

    func testRoundTripWithExpiry() throws {
        let card = try ExampleKeys.aliceCard()
        let decoded = try Card.decode(card.encoded())
        XCTAssertEqual(decoded, card)
        XCTAssertEqual(decoded.version, 1)
        XCTAssertEqual(decoded.identityKey, identity.publicKey)
        XCTAssertEqual(decoded.noiseKey, noise)
        XCTAssertEqual(decoded.displayName, "Alice")
        XCTAssertEqual(decoded.hostName, "alice-laptop.local")
        XCTAssertEqual(decoded.issuedAt, 1_767_225_600)
        XCTAssertEqual(decoded.sequence, 1)
        XCTAssertEqual(decoded.expiresAt, 1_798_761_600)
        XCTAssertEqual(decoded.encoded(), card.encoded())
    }

    func testRoundTripWithoutExpiryNonASCIINameAndEmptyHost() throws {
        let card = try Card.issue(
            identity: identity, noiseKey: noise, displayName: "Zoë 张伟 🦊",
            hostName: "", issuedAt: 0, sequence: UInt64.max)
        let decoded = try Card.decode(card.encoded())
        XCTAssertEqual(decoded, card)
        XCTAssertEqual(Array(decoded.displayName.utf8), Array("Zoë 张伟 🦊".utf8))
        XCTAssertEqual(decoded.hostName, "")
        XCTAssertNil(decoded.expiresAt)
        XCTAssertEqual(decoded.sequence, UInt64.max)
    }

    func testDecomposedNameIsSignedInNFC() throws {
        // "é" as e + U+0301: Swift compares it equal to U+00E9, but the signed bytes differ.
        // One name, one encoding: issue signs the NFC form, and the bytes round-trip exactly.
        let decomposed = "e\u{301}"
        let card = try Card.issue(
            identity: identity, noiseKey: noise, displayName: decomposed,
            hostName: "", issuedAt: 1, sequence: 1)
        let decoded = try Card.decode(card.encoded())
        XCTAssertEqual(Array(decoded.displayName.utf8), [0xC3, 0xA9])
    }

    func testLimitsAreAcceptedAndMatchEncodedLengthBounds() throws {
        let label = String(repeating: "a", count: 63)
        let host = [label, label, label, String(repeating: "b", count: 61)].joined(separator: ".")
        XCTAssertEqual(host.utf8.count, 253)
        let longest = try Card.issue(
            identity: identity, noiseKey: noise,
            displayName: String(repeating: "é", count: 32), hostName: host,
            issuedAt: 1, sequence: 1, expiresAt: 2)
        XCTAssertEqual(longest.encoded().count, Card.maxEncodedLength)
        XCTAssertEqual(Card.maxEncodedLength, 472)
        XCTAssertEqual(try Card.decode(longest.encoded()), longest)

        let shortest = try Card.issue(
            identity: identity, noiseKey: noise, displayName: "A", hostName: "",
            issuedAt: 1, sequence: 1)
        XCTAssertEqual(shortest.encoded().count, Card.minEncodedLength)
        XCTAssertEqual(Card.minEncodedLength, 156)
    }

    // MARK: - docs/PROTOCOL.md

    func testDocumentedExampleCardMatchesCode() throws {
        let docHex = try ProtocolDoc.hexExample("card")
        let card = try ExampleKeys.aliceCard()
        XCTAssertEqual(Sodium.hex(card.encoded()), docHex, "docs/PROTOCOL.md example card is stale")
        let docBytes = try XCTUnwrap(Sodium.fromHex(docHex))
        let decoded = try Card.decode(docBytes)
        XCTAssertEqual(decoded.displayName, "Alice")
        XCTAssertEqual(decoded.hostName, "alice-laptop.local")
        XCTAssertEqual(decoded.identityKey, identity.publicKey)
        XCTAssertEqual(decoded.noiseKey, noise)
        XCTAssertEqual(decoded.expiresAt, 1_798_761_600)
        XCTAssertEqual(decoded.fingerprint.description, try ProtocolDoc.example("card-fingerprint"))
    }

    func testDocumentedExampleKeysMatchSeeds() throws {
        XCTAssertEqual(identity.publicKey.hex, try ProtocolDoc.hexExample("alice-identity-public"))
        XCTAssertEqual(noise.hex, try ProtocolDoc.hexExample("alice-noise-public"))
    }

    // MARK: - Rejections (each its own case)

    func testEveryTruncationIsRejected() throws {
        let bytes = try ExampleKeys.aliceCard().encoded()
        for length in 0..<bytes.count {
            XCTAssertThrowsError(try Card.decode(Array(bytes.prefix(length)))) { error in
                guard case .truncated = error as? CardError else {
                    return XCTFail("prefix of \(length) bytes: expected truncated, got \(error)")
                }
            }
        }
    }

    func testTrailingBytesRejected() throws {
        let bytes = try ExampleKeys.aliceCard().encoded()
        assertDecodeFails(bytes + [0], .trailingBytes(count: 1))
        assertDecodeFails(bytes + bytes, .trailingBytes(count: bytes.count))
    }

    func testUnknownVersionRejected() {
        assertDecodeFails(rawCard(version: 2), .unsupportedVersion(2))
        assertDecodeFails(rawCard(version: 0), .unsupportedVersion(0))
    }

    func testEmptyNameRejected() {
        assertDecodeFails(rawCard(name: []), .emptyDisplayName)
        assertIssueFails(name: "", .emptyDisplayName)
    }

    func testOversizeNameRejected() {
        assertDecodeFails(rawCard(name: Array(repeating: 0x61, count: 65)), .displayNameTooLong(bytes: 65))
        assertDecodeFails(rawCard(name: Array(repeating: 0x61, count: 255)), .displayNameTooLong(bytes: 255))
        // 33 two-byte characters: 33 characters but 66 bytes; the limit is in bytes.
        assertIssueFails(name: String(repeating: "é", count: 33), .displayNameTooLong(bytes: 66))
    }

    func testBadUTF8Rejected() {
        for bad: [UInt8] in [[0xFF], [0x41, 0xC3], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80]] {
            assertDecodeFails(rawCard(name: bad), .displayNameNotUTF8)
        }
    }

    func testControlAndBidiCharactersRejected() {
        for scalar: UInt32 in [0x00, 0x0A, 0x1B, 0x7F, 0x85, 0x2028, 0x202E, 0x2066, 0x200F] {
            let s = "A" + String(Character(Unicode.Scalar(scalar)!)) + "B"  // all valid scalars
            assertDecodeFails(rawCard(name: Array(s.utf8)), .displayNameForbiddenCharacter(codePoint: scalar))
            assertIssueFails(name: s, .displayNameForbiddenCharacter(codePoint: scalar))
        }
    }

    func testOversizeHostRejected() {
        let host = Array(repeating: UInt8(ascii: "a"), count: 254)
        assertDecodeFails(rawCard(host: host), .hostNameTooLong(bytes: 254))
        assertIssueFails(host: String(decoding: host, as: UTF8.self), .hostNameTooLong(bytes: 254))
    }

    func testBadHostNamesRejected() throws {
        let bad = [
            "under_score", "-lead.local", "trail-.local", "a..b", ".lead", "trail.", "sp ace",
            "caf\u{e9}.local", String(repeating: "x", count: 64) + ".local"
        ]
        for host in bad {
            XCTAssertThrowsError(try Card.decode(rawCard(host: Array(host.utf8))), host) { error in
                guard case .invalidHostName = error as? CardError else { return XCTFail("\(host): \(error)") }
            }
            XCTAssertThrowsError(
                try Card.issue(
                    identity: identity, noiseKey: noise, displayName: "A", hostName: host,
                    issuedAt: 1, sequence: 1), host
            ) { error in
                guard case .invalidHostName = error as? CardError else { return XCTFail("\(host): \(error)") }
            }
        }
        // And the good ones around them are accepted.
        for host in ["a", "Alice-Laptop.local", "10-0-0-1.lan", String(repeating: "x", count: 63) + ".local"] {
            XCTAssertNoThrow(try Card.decode(rawCard(host: Array(host.utf8))), host)
        }
    }

    func testExpiryNotAfterIssueRejected() {
        assertDecodeFails(rawCard(issuedAt: 100, expiresAt: 100), .invalidExpiry(issuedAt: 100, expiresAt: 100))
        assertDecodeFails(rawCard(issuedAt: 100, expiresAt: 99), .invalidExpiry(issuedAt: 100, expiresAt: 99))
        assertIssueFails(issuedAt: 100, expiresAt: 50, .invalidExpiry(issuedAt: 100, expiresAt: 50))
        assertIssueFails(issuedAt: 0, expiresAt: 0, .invalidExpiry(issuedAt: 0, expiresAt: 0))
    }

    func testBadSignatureRejected() throws {
        var bytes = rawCard()
        bytes[bytes.count - 1] ^= 0x01
        assertDecodeFails(bytes, .badSignature)
        // A card signed by another identity but naming Alice's key.
        var forged = rawCard()
        let signatureStart = forged.count - Card.signatureLength
        let body = Array(forged[..<signatureStart])
        forged.replaceSubrange(
            signatureStart..., with: ExampleKeys.bobIdentity.sign(Array("parley-card-v1\0".utf8) + body))
        assertDecodeFails(forged, .badSignature)
        // A signature without the domain prefix does not verify either.
        var undomained = rawCard()
        undomained.replaceSubrange(signatureStart..., with: identity.sign(body))
        assertDecodeFails(undomained, .badSignature)
    }

    func testFlippingAnySingleByteFailsDecode() throws {
        let bytes = try ExampleKeys.aliceCard().encoded()
        for index in bytes.indices {
            for mask: UInt8 in [0x01, 0x80, 0xFF] {
                var altered = bytes
                altered[index] ^= mask
                XCTAssertThrowsError(try Card.decode(altered), "byte \(index) ^ \(mask) still decoded")
            }
        }
    }

    // MARK: - Semantics

    func testExpiry() throws {
        let card = try ExampleKeys.aliceCard()
        XCTAssertFalse(card.isExpired(now: 1_798_761_599))
        XCTAssertTrue(card.isExpired(now: 1_798_761_600))
        let forever = try Card.issue(
            identity: identity, noiseKey: noise, displayName: "A", hostName: "",
            issuedAt: 1, sequence: 1)
        XCTAssertFalse(forever.isExpired(now: UInt64.max))
    }

    func testSupersedes() throws {
        func card(_ id: IdentityKeyPair, _ sequence: UInt64) throws -> Card {
            try Card.issue(
                identity: id, noiseKey: noise, displayName: "A", hostName: "", issuedAt: 1, sequence: sequence)
        }
        let older = try card(identity, 1)
        let newer = try card(identity, 2)
        XCTAssertTrue(newer.supersedes(older))
        XCTAssertFalse(older.supersedes(newer))
        XCTAssertFalse(older.supersedes(try card(identity, 1)))
        XCTAssertFalse(try card(ExampleKeys.bobIdentity, 9).supersedes(older), "another identity never supersedes")
    }

    func testFingerprintIsTheIdentityKeys() throws {
        let card = try ExampleKeys.aliceCard()
        XCTAssertEqual(card.fingerprint, Fingerprint(identity.publicKey))
        XCTAssertNotEqual(card.fingerprint, Fingerprint(ExampleKeys.bobIdentity.publicKey))
    }

    func testErrorDescriptionsAreActionable() {
        XCTAssertTrue(CardError.unsupportedVersion(9).description.contains("upgrade"))
        XCTAssertTrue(CardError.displayNameForbiddenCharacter(codePoint: 0x202E).description.contains("U+202E"))
        XCTAssertTrue(CardError.displayNameForbiddenCharacter(codePoint: 0x0A).description.contains("U+000A"))
    }
}
