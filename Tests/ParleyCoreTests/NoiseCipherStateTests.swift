import CSodium
import ParleyCore
import XCTest

final class NoiseCipherStateTests: XCTestCase {
    private let keyBytes: [UInt8] = Array(1...32)
    private var key: SecretBytes {
        var k = keyBytes
        return SecretBytes(consuming: &k)
    }

    /// ChaCha20-Poly1305 IETF straight from libsodium, with the nonce built by hand.
    private func libsodiumEncrypt(key: [UInt8], nonce: [UInt8], ad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        XCTAssertEqual(
            crypto_aead_chacha20poly1305_ietf_encrypt(
                &out, nil, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, nonce, key), 0)
        return out
    }

    func testNonceIsFourZeroBytesThenLittleEndianCounter() throws {
        var cs = CipherState(key: key)
        cs.setNonce(0x0102_0304_0506_0708)
        let ad: [UInt8] = [9, 9, 9]
        let plaintext = Array("nonce layout".utf8)

        let first = try cs.encrypt(ad: ad, plaintext: plaintext)
        XCTAssertEqual(
            first,
            libsodiumEncrypt(
                key: keyBytes, nonce: [0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1],
                ad: ad, plaintext: plaintext))
        XCTAssertEqual(cs.nonce, 0x0102_0304_0506_0709)
        let second = try cs.encrypt(ad: ad, plaintext: plaintext)
        XCTAssertEqual(
            second,
            libsodiumEncrypt(
                key: keyBytes, nonce: [0, 0, 0, 0, 9, 7, 6, 5, 4, 3, 2, 1],
                ad: ad, plaintext: plaintext))

        var receiver = CipherState(key: key)
        receiver.setNonce(0x0102_0304_0506_0708)
        XCTAssertEqual(try receiver.decrypt(ad: ad, ciphertext: first), plaintext)
        XCTAssertEqual(try receiver.decrypt(ad: ad, ciphertext: second), plaintext)
        // Wrong associated data fails.
        var other = CipherState(key: key)
        other.setNonce(0x0102_0304_0506_0708)
        XCTAssertThrowsError(try other.decrypt(ad: [9, 9], ciphertext: first)) {
            XCTAssertEqual($0 as? NoiseError, .decryptionFailed)
        }
    }

    func testNonceStartsAtZero() throws {
        var cs = CipherState(key: key)
        XCTAssertTrue(cs.hasKey)
        XCTAssertEqual(cs.nonce, 0)
        XCTAssertEqual(
            try cs.encrypt(ad: [], plaintext: [1]),
            libsodiumEncrypt(key: keyBytes, nonce: [UInt8](repeating: 0, count: 12), ad: [], plaintext: [1]))
    }

    func testReservedNonceIsRefused() throws {
        var cs = CipherState(key: key)
        cs.setNonce(UInt64.max - 1)
        let last = try cs.encrypt(ad: [], plaintext: [1, 2, 3])  // the last usable nonce
        XCTAssertEqual(cs.nonce, UInt64.max)
        XCTAssertThrowsError(try cs.encrypt(ad: [], plaintext: [1, 2, 3])) {
            XCTAssertEqual($0 as? NoiseError, .nonceExhausted)
        }
        XCTAssertEqual(cs.nonce, UInt64.max)

        var receiver = CipherState(key: key)
        receiver.setNonce(UInt64.max - 1)
        XCTAssertEqual(try receiver.decrypt(ad: [], ciphertext: last), [1, 2, 3])
        XCTAssertThrowsError(try receiver.decrypt(ad: [], ciphertext: last)) {
            XCTAssertEqual($0 as? NoiseError, .nonceExhausted)
        }
    }

    func testFailedDecryptDoesNotAdvanceNonce() throws {
        var sender = CipherState(key: key)
        var receiver = CipherState(key: key)
        let message = try sender.encrypt(ad: [], plaintext: Array("hello".utf8))
        var forged = message
        forged[0] ^= 0x01
        XCTAssertThrowsError(try receiver.decrypt(ad: [], ciphertext: forged)) {
            XCTAssertEqual($0 as? NoiseError, .decryptionFailed)
        }
        XCTAssertEqual(receiver.nonce, 0)
        XCTAssertThrowsError(try receiver.decrypt(ad: [], ciphertext: Array(message.prefix(15)))) {
            XCTAssertEqual($0 as? NoiseError, .messageTooShort)
        }
        XCTAssertEqual(receiver.nonce, 0)
        XCTAssertEqual(try receiver.decrypt(ad: [], ciphertext: message), Array("hello".utf8))
        XCTAssertEqual(receiver.nonce, 1)
    }

    func testRekeyFollowsSpecAndKeepsPeersInSync() throws {
        var a = CipherState(key: key)
        var b = CipherState(key: key)
        a.setNonce(5)
        b.setNonce(5)
        var reference = a
        let before = try reference.encrypt(ad: [], plaintext: [42])

        a.rekey()
        b.rekey()
        XCTAssertEqual(a.nonce, 5, "rekey keeps the nonce")
        let after = try a.encrypt(ad: [], plaintext: [42])
        XCTAssertNotEqual(after, before)
        XCTAssertEqual(try b.decrypt(ad: [], ciphertext: after), [42])

        // REKEY(k) = first 32 bytes of ENCRYPT(k, 2^64-1, zerolen, zeros[32]).
        let block = libsodiumEncrypt(
            key: keyBytes, nonce: [0, 0, 0, 0] + [UInt8](repeating: 0xff, count: 8),
            ad: [], plaintext: [UInt8](repeating: 0, count: 32))
        var expectedKey = Array(block.prefix(32))
        var expected = CipherState(key: SecretBytes(consuming: &expectedKey))
        expected.setNonce(5)
        XCTAssertEqual(try expected.encrypt(ad: [], plaintext: [42]), after)

        // Only one side rekeying breaks the channel.
        a.rekey()
        XCTAssertThrowsError(try b.decrypt(ad: [], ciphertext: try a.encrypt(ad: [], plaintext: [1])))
    }

    func testNoKeyPassesThrough() throws {
        var cs = CipherState()
        XCTAssertFalse(cs.hasKey)
        XCTAssertEqual(try cs.encrypt(ad: [1], plaintext: [1, 2, 3]), [1, 2, 3])
        XCTAssertEqual(try cs.decrypt(ad: [1], ciphertext: [4, 5]), [4, 5])
        XCTAssertEqual(cs.nonce, 0)
        cs.rekey()
        XCTAssertFalse(cs.hasKey)
    }

    func testMessageLengthLimits() throws {
        var cs = CipherState(key: key)
        let largest = try cs.encrypt(ad: [], plaintext: [UInt8](repeating: 7, count: NoiseConstants.maxPlaintextLength))
        XCTAssertEqual(largest.count, NoiseConstants.maxMessageLength)
        XCTAssertThrowsError(
            try cs.encrypt(ad: [], plaintext: [UInt8](repeating: 7, count: NoiseConstants.maxPlaintextLength + 1))
        ) {
            XCTAssertEqual($0 as? NoiseError, .messageTooLong(NoiseConstants.maxMessageLength + 1))
        }
        XCTAssertEqual(cs.nonce, 1)

        var receiver = CipherState(key: key)
        XCTAssertThrowsError(
            try receiver.decrypt(ad: [], ciphertext: [UInt8](repeating: 0, count: NoiseConstants.maxMessageLength + 1))
        ) {
            XCTAssertEqual($0 as? NoiseError, .messageTooLong(NoiseConstants.maxMessageLength + 1))
        }
        XCTAssertEqual(try receiver.decrypt(ad: [], ciphertext: largest).count, NoiseConstants.maxPlaintextLength)
        // An empty plaintext is a bare tag.
        let empty = try cs.encrypt(ad: [], plaintext: [])
        XCTAssertEqual(empty.count, NoiseConstants.tagLength)
        XCTAssertEqual(try receiver.decrypt(ad: [], ciphertext: empty), [])
    }
}
