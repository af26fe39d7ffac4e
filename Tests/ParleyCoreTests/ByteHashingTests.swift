import ParleyCore
import XCTest

/// The ids and identity keys hash their bytes in one call (`hashFixedLengthBytes`) instead
/// of the synthesized byte-by-byte hash: values equal by their bytes must still hash alike
/// and find each other in sets and dictionaries, whichever array holds the bytes.
final class ByteHashingTests: XCTestCase {
    private func bytes(_ count: Int, _ seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: Int($0) &* 31) &+ seed }
    }

    func testEqualValuesFromDifferentArraysHashAlikeAndFindEachOther() throws {
        for seed in UInt8(0)..<20 {
            let b16 = bytes(16, seed)
            let b32 = bytes(32, seed)
            XCTAssertEqual(MessageID(exactly: b16).hashValue, MessageID(exactly: Array(b16)).hashValue)
            XCTAssertEqual(RoomID(exactly: b16).hashValue, RoomID(exactly: b16.map { $0 }).hashValue)
            XCTAssertEqual(TransferID(exactly: b16).hashValue, TransferID(exactly: Array(b16[...])).hashValue)
            XCTAssertEqual(
                RoomOperationHash(exactly: b32).hashValue, RoomOperationHash(exactly: b32.map { $0 }).hashValue)
            XCTAssertEqual(
                try IdentityPublicKey(bytes: b32).hashValue, try IdentityPublicKey(bytes: b32.map { $0 }).hashValue)
            XCTAssertEqual(
                try NoisePublicKey(bytes: b32).hashValue, try NoisePublicKey(bytes: b32.map { $0 }).hashValue)
        }
        // 1,000 distinct ids: every one is found by an equal copy, none by a neighbour.
        let ids = (0..<1_000).map { i in
            MessageID(exactly: (0..<16).map { UInt8(truncatingIfNeeded: i >> ($0 % 2 * 8)) &+ UInt8($0) })
        }
        XCTAssertEqual(Set(ids).count, 1_000)
        var byID: [MessageID: Int] = [:]
        for (i, id) in ids.enumerated() { byID[id] = i }
        for (i, id) in ids.enumerated() { XCTAssertEqual(byID[MessageID(exactly: Array(id.bytes))], i) }
        let keys = try (0..<200).map { i in
            try IdentityPublicKey(bytes: (0..<32).map { UInt8(truncatingIfNeeded: i &+ $0 * 7) })
        }
        XCTAssertEqual(Set(keys.map { try! IdentityPublicKey(bytes: Array($0.bytes)) }), Set(keys))
    }
}
