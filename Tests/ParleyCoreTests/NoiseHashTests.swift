import ParleyCore
import XCTest

/// The hash functions under Noise's HKDF, checked against outside values: RFC 4231 for
/// HMAC-SHA256, and Python's `hmac` with `hashlib.blake2b` (block size 128) for
/// HMAC-BLAKE2b, which is RFC 2104 over unkeyed BLAKE2b as the Noise spec requires.
final class NoiseHashTests: XCTestCase {
    private func hex(_ s: String) -> [UInt8] { Sodium.fromHex(s)! }
    private let longKey = [UInt8](repeating: 0xaa, count: 131)  // longer than either block
    private let longKeyData = Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)

    func testSHA256Parameters() {
        XCTAssertEqual(NoiseSHA256.name, "SHA256")
        XCTAssertEqual(NoiseSHA256.hashLength, 32)
        XCTAssertEqual(NoiseSHA256.blockLength, 64)
        XCTAssertEqual(
            Sodium.hex(NoiseSHA256.hash(Array("abc".utf8))),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    func testHMACSHA256MatchesRFC4231() {
        // RFC 4231 test case 1 (short key) and 6 (131-byte key, hashed first).
        XCTAssertEqual(
            Sodium.hex(NoiseSHA256.hmac(key: [UInt8](repeating: 0x0b, count: 20), data: Array("Hi There".utf8))),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        XCTAssertEqual(
            Sodium.hex(NoiseSHA256.hmac(key: longKey, data: longKeyData)),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        // Empty key and message (Split runs HKDF over an empty input).
        XCTAssertEqual(
            Sodium.hex(NoiseSHA256.hmac(key: [], data: [])),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    func testBLAKE2bParameters() {
        XCTAssertEqual(NoiseBLAKE2b.name, "BLAKE2b")
        XCTAssertEqual(NoiseBLAKE2b.hashLength, 64)
        XCTAssertEqual(NoiseBLAKE2b.blockLength, 128)
        XCTAssertEqual(
            Sodium.hex(NoiseBLAKE2b.hash(Array("abc".utf8))),
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"
        )
    }

    func testHMACBLAKE2bIsRFC2104NotKeyedBLAKE2b() {
        XCTAssertEqual(
            Sodium.hex(NoiseBLAKE2b.hmac(key: [UInt8](repeating: 0x0b, count: 20), data: Array("Hi There".utf8))),
            "358a6a184924894fc34bee5680eedf57d84a37bb38832f288e3b27dc63a98cc8c91e76da476b508bc6b2d408a248857452906e4a20b48c6b4b55d2df0fe1dd24"
        )
        XCTAssertEqual(
            Sodium.hex(NoiseBLAKE2b.hmac(key: longKey, data: longKeyData)),
            "a54b2943b2a20227d41ca46c0945af09bc1faefb2f49894c23aebc557fb79c4889dca74408dc865086667aedee4a3185c53a49c80b814c4c5813ea0c8b38a8f8"
        )
        XCTAssertEqual(
            Sodium.hex(NoiseBLAKE2b.hmac(key: Array(0..<64), data: [])),
            "ea1896ab7c8319a824482f757c038b70089765501b1f8bdb78153d195915bd330bde7a8c0fb6dbf3de09277662ba661fde80017dc277309eedfe05bdf5b27e18"
        )
    }
}
