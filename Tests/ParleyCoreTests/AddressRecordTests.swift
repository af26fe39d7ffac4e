import XCTest

@testable import ParleyCore

final class AddressRecordTests: XCTestCase {
    let alice = IdentityKeyPair.generate()
    let mallory = IdentityKeyPair.generate()

    func endpoint(_ host: String, _ port: UInt16 = 7744) -> SignedAddressRecord.Endpoint {
        SignedAddressRecord.Endpoint(host: host, port: port)!
    }

    func testASignedRecordRoundTripsThroughTheWireRecord() throws {
        let r = try SignedAddressRecord(
            signing: [endpoint("10.0.2.5"), endpoint("2001:db8::5", 7745)], issuedAt: 1_700_000_000_000, with: alice)
        let bytes = AppRecord.addressRecord(r).encoded()
        XCTAssertEqual(bytes[0], 0x21)
        let decoded = try AppRecord.decode(type: 0x21, payload: Array(bytes[5...]))
        XCTAssertEqual(decoded, .addressRecord(r))
        XCTAssertEqual(r.endpoints.map(\.description), ["10.0.2.5:7744", "[2001:db8::5]:7745"])
        XCTAssertEqual(r.encoded().count, 1 + 32 + 8 + 1 + 7 + 19 + 64)
    }

    /// A relay (or anyone) cannot redirect alice: her key signs the addresses.
    func testARecordNamingAliceButSignedByMalloryIsRefused() throws {
        let forged = try SignedAddressRecord(signing: [endpoint("10.6.6.6")], issuedAt: 1, with: mallory)
        var bytes = forged.encoded()
        bytes.replaceSubrange(1..<33, with: alice.publicKey.bytes)  // claim to be alice
        XCTAssertThrowsError(try SignedAddressRecord.decode(bytes)) {
            XCTAssertEqual($0 as? AddressRecordError, .badSignature)
        }
    }

    func testChangingAnAddressPortOrDateOfAliceRecordBreaksItsSignature() throws {
        let r = try SignedAddressRecord(signing: [endpoint("10.0.2.5")], issuedAt: 1_000, with: alice)
        let good = r.encoded()
        XCTAssertNoThrow(try SignedAddressRecord.decode(good))
        for index in [35, 41, 44, 47, 48, good.count - 1] {  // date, count area, address, port, signature
            var bad = good
            bad[index] ^= 0x01
            XCTAssertThrowsError(try SignedAddressRecord.decode(bad), "byte \(index)")
        }
    }

    func testBoundsAndUnusableAddressesAreRefused() throws {
        XCTAssertThrowsError(try SignedAddressRecord(signing: [], issuedAt: 1, with: alice))
        let nine = (1...9).map { endpoint("10.0.0.\($0)") }
        XCTAssertThrowsError(try SignedAddressRecord(signing: nine, issuedAt: 1, with: alice)) {
            XCTAssertEqual($0 as? AddressRecordError, .endpointCount(9))
        }
        XCTAssertNoThrow(try SignedAddressRecord(signing: Array(nine.prefix(8)), issuedAt: 1, with: alice))
        for host in ["0.0.0.0", "255.255.255.255", "224.0.0.251", "ff02::fb", "::"] {
            let r = try SignedAddressRecord(signing: [endpoint(host)], issuedAt: 1, with: alice)
            XCTAssertThrowsError(try SignedAddressRecord.decode(r.encoded()), host)
        }
        XCTAssertNil(SignedAddressRecord.Endpoint(host: "10.0.0.1", port: 0))
        XCTAssertNil(SignedAddressRecord.Endpoint(host: "alice.local", port: 1))
        let r = try SignedAddressRecord(signing: [endpoint("10.0.0.1")], issuedAt: 1, with: alice)
        XCTAssertThrowsError(try SignedAddressRecord.decode(r.encoded() + [0]))
        XCTAssertThrowsError(try SignedAddressRecord.decode(Array(r.encoded().dropLast())))
        XCTAssertThrowsError(try SignedAddressRecord.decode([UInt8](repeating: 0, count: 4096)))
        var v2 = r.encoded()
        v2[0] = 2
        XCTAssertThrowsError(try SignedAddressRecord.decode(v2)) {
            XCTAssertEqual($0 as? AddressRecordError, .unsupportedVersion(2))
        }
    }

    func testContactTagsRevealOnlyTheIntersection() throws {
        let carol = IdentityKeyPair.generate().publicKey
        let dave = IdentityKeyPair.generate().publicKey
        let salt = [UInt8](repeating: 7, count: ContactTags.saltLength)
        let tags = ContactTags(salt: salt, identities: [carol])
        let decoded = try ContactTags.decode(AppRecord.contactTags(tags).encoded().dropFirst(5).map { $0 })
        XCTAssertTrue(decoded.contains(carol))
        XCTAssertFalse(decoded.contains(dave))
        // A new salt: the same contact list gives unlinkable tags.
        let other = ContactTags(salt: [UInt8](repeating: 8, count: 16), identities: [carol])
        XCTAssertTrue(other.tags.isDisjoint(with: tags.tags))
        XCTAssertThrowsError(try ContactTags.decode(salt + [0xFF, 0xFF]))
        XCTAssertThrowsError(try ContactTags.decode(salt + [0, 1] + [1, 2]))
        XCTAssertThrowsError(try ContactTags.decode([1, 2, 3]))
    }

    func testDialBackRecordsRoundTripAndPortZeroIsMalformed() throws {
        let req = DialBackRequest(nonce: 42, port: 7744)!
        XCTAssertEqual(try AppRecord.decode(type: 0x23, payload: req.encoded()), .dialBackRequest(req))
        XCTAssertThrowsError(try AppRecord.decode(type: 0x23, payload: [0, 0, 0, 0, 0, 0, 0, 1, 0, 0]))
        let res = DialBackResult(nonce: 42, outcome: .connected)
        XCTAssertEqual(try AppRecord.decode(type: 0x24, payload: res.encoded()), .dialBackResult(res))
        XCTAssertThrowsError(try AppRecord.decode(type: 0x24, payload: [0, 0, 0, 0, 0, 0, 0, 1, 9]))
        XCTAssertEqual(AppRecord.RecordType.addressRecord.feature, .addressGossip)
        XCTAssertEqual(ProtocolFeatures.addressGossip.rawValue, 4)
    }

    func testIPAddressTextParsesAndPrintsCanonically() {
        XCTAssertEqual(IPAddressText.parse("192.168.1.20"), [192, 168, 1, 20])
        for bad in [
            "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "a.b.c.d", "1::2::3", "12345::", "[::1]", "fe80::1%eth0", ""
        ] {
            XCTAssertNil(IPAddressText.parse(bad), bad)
        }
        for text in ["::1", "2001:db8::5", "fe80::1:2", "::", "1:2:3:4:5:6:7:8", "::ffff:10.0.0.1"] {
            guard let b = IPAddressText.parse(text) else { return XCTFail(text) }
            XCTAssertEqual(b.count, 16)
            XCTAssertEqual(IPAddressText.parse(IPAddressText.format(b)), b, text)
        }
        XCTAssertEqual(IPAddressText.format(IPAddressText.parse("2001:0db8:0:0:0:0:0:5")!), "2001:db8::5")
    }
}
