import XCTest

@testable import ParleyCore

final class FingerprintTests: XCTestCase {
    let alice = ExampleKeys.aliceIdentity.publicKey
    let bob = ExampleKeys.bobIdentity.publicKey

    func testBase32MatchesRFC4648Vectors() {
        // RFC 4648 section 10, lower-cased and without padding.
        let vectors = [
            "": "", "f": "my", "fo": "mzxq", "foo": "mzxw6", "foob": "mzxw6yq",
            "fooba": "mzxw6ytb", "foobar": "mzxw6ytboi"
        ]
        for (input, output) in vectors {
            XCTAssertEqual(Base32.encode(Array(input.utf8)), output, input)
        }
    }

    func testFingerprintIsTruncatedDomainSeparatedSHA256() {
        let digest = Sodium.sha256(Array("parley-fingerprint-v1".utf8), alice.bytes)
        XCTAssertEqual(Fingerprint(alice).compact, Base32.encode(Array(digest.prefix(20))))
        // Without the domain string the result differs.
        XCTAssertNotEqual(Fingerprint(alice).compact, Base32.encode(Array(Sodium.sha256(alice.bytes).prefix(20))))
    }

    func testFormat() {
        let fp = Fingerprint(alice)
        XCTAssertEqual(fp.compact.count, 32)
        XCTAssertTrue(fp.compact.utf8.allSatisfy(Base32.isDigit))
        let groups = fp.description.split(separator: "-", omittingEmptySubsequences: false)
        XCTAssertEqual(groups.count, 8)
        XCTAssertTrue(groups.allSatisfy { $0.count == 4 })
        XCTAssertEqual(groups.joined(), fp.compact)
        XCTAssertEqual(alice.fingerprint, fp)
    }

    func testDocumentedFingerprint() throws {
        XCTAssertEqual(Fingerprint(alice).description, try ProtocolDoc.example("card-fingerprint"))
    }

    func testDifferentKeysDifferentFingerprints() {
        XCTAssertNotEqual(Fingerprint(alice), Fingerprint(bob))
        XCTAssertEqual(Fingerprint(alice), Fingerprint(ExampleKeys.aliceIdentity.publicKey))
    }

    func testNormalize() {
        XCTAssertEqual(Fingerprint.normalize("ABCD-efgh ij:kl"), "abcdefghijkl")
        XCTAssertEqual(Fingerprint.normalize(""), "")
        for bad in ["abc0", "abc1", "abc8", "abc9", "ab!c", "abcé", "ab_c", "ab\tc"] {
            XCTAssertNil(Fingerprint.normalize(bad), bad)
        }
    }

    func testPrefixMatching() {
        let fp = Fingerprint(alice)
        XCTAssertTrue(fp.matches(prefix: fp.compact))
        XCTAssertTrue(fp.matches(prefix: fp.description))
        XCTAssertTrue(fp.matches(prefix: fp.description.uppercased()))
        XCTAssertTrue(fp.matches(prefix: String(fp.description.prefix(9))))  // "xxxx-xxxx"
        XCTAssertTrue(fp.matches(prefix: String(fp.compact.prefix(Fingerprint.minimumPrefixLength))))
        XCTAssertFalse(
            fp.matches(prefix: String(fp.compact.prefix(Fingerprint.minimumPrefixLength - 1))),
            "shorter than the minimum")
        XCTAssertFalse(
            fp.matches(prefix: String(fp.compact.prefix(3)) + "-"), "separators do not count towards the minimum")
        XCTAssertFalse(fp.matches(prefix: ""))
        XCTAssertFalse(fp.matches(prefix: fp.compact + "a"), "longer than a fingerprint")
        XCTAssertFalse(fp.matches(prefix: Fingerprint(bob).compact.prefix(8).description))
        XCTAssertFalse(fp.matches(prefix: String(fp.compact.prefix(4)) + "0"), "invalid character")
    }

    func testSafetyNumberFormatAndDefinition() {
        let number = SafetyNumber.compute(alice, bob)
        let groups = number.split(separator: " ", omittingEmptySubsequences: false)
        XCTAssertEqual(groups.count, 12)
        XCTAssertTrue(groups.allSatisfy { $0.count == 5 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) })
        // Recompute from the definition.
        let (low, high) = alice.bytes.lexicographicallyPrecedes(bob.bytes) ? (alice, bob) : (bob, alice)
        let digest = Sodium.sha512(Array("parley-safety-v1".utf8), low.bytes, high.bytes)
        let first = digest[0..<5].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 100_000
        XCTAssertEqual(UInt64(groups[0]), first)
    }

    func testSafetyNumberIsSymmetricAndPairSpecific() {
        let carol = IdentityKeyPair.generate().publicKey
        XCTAssertEqual(SafetyNumber.compute(alice, bob), SafetyNumber.compute(bob, alice))
        XCTAssertNotEqual(SafetyNumber.compute(alice, bob), SafetyNumber.compute(alice, carol))
        XCTAssertNotEqual(SafetyNumber.compute(alice, bob), SafetyNumber.compute(bob, carol))
    }

    func testDocumentedSafetyNumber() throws {
        XCTAssertEqual(SafetyNumber.compute(alice, bob), try ProtocolDoc.example("safety-number"))
        XCTAssertEqual(bob.hex, try ProtocolDoc.hexExample("bob-identity-public"))
    }
}
