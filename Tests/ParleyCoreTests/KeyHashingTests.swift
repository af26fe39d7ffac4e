import XCTest

@testable import ParleyCore

/// Keys and ids are dictionary keys on every message's path: each hashes its bytes as one
/// buffer (`Hasher.combine(bytes:)`), not byte by byte as the synthesized `Hashable` of a
/// `[UInt8]` field does (issue 32 part 7: ~1,000 instructions per lookup).
final class KeyHashingTests: XCTestCase {
    private func bufferHash(_ bytes: [UInt8]) -> Int {
        var hasher = Hasher()
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        return hasher.finalize()
    }

    func testKeysAndIdsHashTheirBytesAsOneBuffer() throws {
        let b32 = (0..<32).map { UInt8($0 * 7 & 0xff) }
        let b16 = Array(b32.prefix(16))
        XCTAssertEqual(try IdentityPublicKey(bytes: b32).hashValue, bufferHash(b32))
        XCTAssertEqual(try NoisePublicKey(bytes: b32).hashValue, bufferHash(b32))
        XCTAssertEqual(MessageID(exactly: b16).hashValue, bufferHash(b16))
        XCTAssertEqual(RoomID(exactly: b16).hashValue, bufferHash(b16))
        XCTAssertEqual(RoomOperationHash(exactly: b32).hashValue, bufferHash(b32))
        XCTAssertEqual(TransferID(exactly: b16).hashValue, bufferHash(b16))
    }

    func testEqualKeysHashEquallyAndDictionariesFindThem() throws {
        var byKey: [IdentityPublicKey: Int] = [:]
        var byID: [MessageID: Int] = [:]
        for n in 0..<200 {
            let bytes = (0..<32).map { UInt8(($0 + n * 31) & 0xff) }
            byKey[try IdentityPublicKey(bytes: bytes)] = n
            byID[MessageID(exactly: Array(bytes.suffix(16)))] = n
        }
        XCTAssertEqual(byKey.count, 200)
        for n in 0..<200 {
            let bytes = (0..<32).map { UInt8(($0 + n * 31) & 0xff) }
            XCTAssertEqual(byKey[try IdentityPublicKey(bytes: Array(bytes))], n)
            XCTAssertEqual(byID[MessageID(exactly: Array(bytes.suffix(16)))], n)
        }
    }
}
