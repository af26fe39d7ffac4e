import SeededRandom
import XCTest

@testable import ParleyDiscovery

/// TXTRecord is the one piece of discovery that parses bytes from the network.
final class TXTRecordTests: XCTestCase {
    // MARK: encode

    func testEncodesSortedLengthPrefixedEntries() {
        XCTAssertEqual(
            TXTRecord.encode(["v": "1", "fp": "ab"]),
            [5] + Array("fp=ab".utf8) + [3] + Array("v=1".utf8))
    }

    func testEmptyDictionaryIsSingleZeroByte() {
        XCTAssertEqual(TXTRecord.encode([:]), [0])
        XCTAssertEqual(try TXTRecord.encodeStrict([:]), [0])
    }

    func testParleyRecordRoundTrips() throws {
        let dict = [
            ParleyTXT.versionKey: ParleyTXT.protocolVersion,
            ParleyTXT.fingerprintKey: "0123456789abcdefghijklmnopqrstuv",
            ParleyTXT.idKey: "n1"
        ]
        let bytes = try TXTRecord.encodeStrict(dict)
        XCTAssertLessThan(bytes.count, 64, "Parley's TXT must stay small")
        XCTAssertEqual(TXTRecord.decode(bytes), dict)
    }

    func testUTF8ValuesRoundTrip() {
        let dict = ["name": "Zoë 🦜", "empty": ""]
        XCTAssertEqual(TXTRecord.decode(TXTRecord.encode(dict)), dict)
    }

    func testEntryOfExactly255BytesFitsAnd256DoesNot() throws {
        let fits = String(repeating: "x", count: TXTRecord.maxEntryBytes - 2)  // "k=" + 253
        let bytes = try TXTRecord.encodeStrict(["k": fits])
        XCTAssertEqual(bytes.first, 255)
        XCTAssertEqual(bytes.count, 256)
        XCTAssertEqual(TXTRecord.decode(bytes), ["k": fits])

        let tooLong = fits + "x"
        XCTAssertThrowsError(try TXTRecord.encodeStrict(["k": tooLong])) {
            XCTAssertEqual($0 as? TXTRecord.EncodingError, .entryTooLong(key: "k", bytes: 256))
        }
        XCTAssertEqual(
            TXTRecord.encode(["k": tooLong, "v": "1"]), [3] + Array("v=1".utf8),
            "lenient encode drops only the entry that does not fit")
    }

    func testInvalidKeysAreRefused() {
        for key in ["", "a=b", "tab\t", "é", "nul\u{0}"] {
            XCTAssertThrowsError(try TXTRecord.encodeStrict([key: "1"]), "key \(key.debugDescription)") {
                XCTAssertEqual($0 as? TXTRecord.EncodingError, .invalidKey(key))
            }
            XCTAssertEqual(TXTRecord.encode([key: "1"]), [0])
        }
    }

    func testKeysDifferingOnlyInCaseAreDuplicates() {
        XCTAssertThrowsError(try TXTRecord.encodeStrict(["FP": "a", "fp": "b"])) {
            XCTAssertEqual($0 as? TXTRecord.EncodingError, .duplicateKey("fp"))
        }
        // Lenient: the first in sort order ("FP" < "fp") wins, the other is dropped.
        XCTAssertEqual(TXTRecord.decode(TXTRecord.encode(["FP": "a", "fp": "b"])), ["fp": "a"])
    }

    func testRecordLongerThanLimitIsRefusedOrTrimmed() throws {
        // 6 entries of 256 bytes = 1536 > 1300.
        var dict: [String: String] = [:]
        for i in 0..<6 { dict["k\(i)"] = String(repeating: "y", count: 252) }
        XCTAssertThrowsError(try TXTRecord.encodeStrict(dict)) {
            XCTAssertEqual($0 as? TXTRecord.EncodingError, .recordTooLong(bytes: 1536))
        }
        let trimmed = TXTRecord.encode(dict)
        XCTAssertLessThanOrEqual(trimmed.count, TXTRecord.maxEncodedBytes)
        XCTAssertEqual(TXTRecord.decode(trimmed).keys.sorted(), ["k0", "k1", "k2", "k3", "k4"])
    }

    // MARK: decode

    func testDecodeLowercasesKeysAndFirstOccurrenceWins() {
        let bytes = entry("FP=first") + entry("fp=second") + entry("V=1")
        XCTAssertEqual(TXTRecord.decode(bytes), ["fp": "first", "v": "1"])
    }

    func testDecodeBareKeyAndEmptyValue() {
        XCTAssertEqual(TXTRecord.decode(entry("flag") + entry("e=")), ["flag": "", "e": ""])
    }

    func testDecodeValueMayContainEquals() {
        XCTAssertEqual(TXTRecord.decode(entry("k=a=b")), ["k": "a=b"])
    }

    func testDecodeSkipsEmptyStringsAndInvalidKeys() {
        let bytes: [UInt8] = [0] + entry("=novalue") + entry("\u{1}k=1") + [0, 0] + entry("ok=1")
        XCTAssertEqual(TXTRecord.decode(bytes), ["ok": "1"])
    }

    func testDecodeSkipsNonUTF8ValuesAndKeys() {
        let badValue: [UInt8] = [5] + Array("k=".utf8) + [0xFF, 0xFE, 0xC3]
        let badKey: [UInt8] = [4, 0xC3, 0xA9, UInt8(ascii: "="), UInt8(ascii: "1")]
        XCTAssertEqual(TXTRecord.decode(badValue + badKey + entry("v=1")), ["v": "1"])
    }

    func testDecodeStopsAtTruncatedFinalString() {
        let bytes = entry("v=1") + [200] + Array("fp=short".utf8)
        XCTAssertEqual(TXTRecord.decode(bytes), ["v": "1"])
        XCTAssertEqual(TXTRecord.decode([255]), [:])
        XCTAssertEqual(TXTRecord.decode([]), [:])
    }

    func testDecodeKeepsAtMostMaxKeys() {
        var bytes: [UInt8] = []
        for i in 0..<(TXTRecord.maxDecodedKeys * 3) { bytes += entry("k\(i)=v") }
        let decoded = TXTRecord.decode(bytes)
        XCTAssertEqual(decoded.count, TXTRecord.maxDecodedKeys)
        XCTAssertEqual(decoded["k0"], "v")
        XCTAssertNil(decoded["k\(TXTRecord.maxDecodedKeys)"])
    }

    func testDecodeIgnoresBytesPastInputLimit() {
        // Filler of empty strings up to the limit, then a valid entry past it.
        let bytes = [UInt8](repeating: 0, count: TXTRecord.maxDecodedInputBytes) + entry("late=1")
        XCTAssertEqual(TXTRecord.decode(bytes), [:])
        XCTAssertEqual(TXTRecord.decode(Array(bytes.suffix(7))), ["late": "1"])
    }

    func testDecodeNeverTrapsOnRandomBytes() {
        var rng = SplitMix64(seed: 0x5EED)
        for _ in 0..<2_000 {
            let count = Int(rng.next() % 600)
            let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let decoded = TXTRecord.decode(bytes)
            XCTAssertLessThanOrEqual(decoded.count, TXTRecord.maxDecodedKeys)
            for key in decoded.keys {
                XCTAssertFalse(key.isEmpty)
                XCTAssertFalse(key.contains("="))
            }
        }
    }

    // MARK: helpers

    private func entry(_ s: String) -> [UInt8] {
        let body = Array(s.utf8)
        return [UInt8(body.count)] + body
    }
}

/// A small deterministic generator, so a failure reproduces.
