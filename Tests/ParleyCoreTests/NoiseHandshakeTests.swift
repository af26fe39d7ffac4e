import ParleyCore
import XCTest

final class NoiseHandshakeTests: XCTestCase {
    private typealias XX = HandshakeState<NoiseSHA256>

    private func pair(
        initiatorPrologue: [UInt8] = Array("parley".utf8), responderPrologue: [UInt8] = Array("parley".utf8),
        initiatorPSK: SecretBytes? = nil, responderPSK: SecretBytes? = nil
    )
        -> (XX, XX, NoiseStaticKeyPair, NoiseStaticKeyPair)
    {
        let si = NoiseStaticKeyPair.generate()
        let sr = NoiseStaticKeyPair.generate()
        return (
            XX(role: .initiator, prologue: initiatorPrologue, staticKey: si, presharedKey: initiatorPSK),
            XX(role: .responder, prologue: responderPrologue, staticKey: sr, presharedKey: responderPSK),
            si, sr
        )
    }

    private func assertThrows<T>(
        _ expected: NoiseError, _ body: @autoclosure () throws -> T,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try body(), file: file, line: line) {
            XCTAssertEqual($0 as? NoiseError, expected, file: file, line: line)
        }
    }

    /// Runs the three messages and returns the payloads each reader got; `tamper` may
    /// rewrite message `step` in flight (message 1's payload is plaintext in XX, so a
    /// change there is only caught later, through the handshake hash).
    @discardableResult
    private func handshake(
        _ i: inout XX, _ r: inout XX, payloads: [[UInt8]] = [[1], [2, 2], [3, 3, 3]],
        tamper: (Int, inout [UInt8]) -> Void = { _, _ in }
    ) throws -> [[UInt8]] {
        var received: [[UInt8]] = []
        for step in 0..<3 {
            if step % 2 == 0 {
                var m = try i.writeMessage(payload: payloads[step])
                tamper(step, &m)
                received.append(try r.readMessage(m))
            } else {
                var m = try r.writeMessage(payload: payloads[step])
                tamper(step, &m)
                received.append(try i.readMessage(m))
            }
        }
        return received
    }

    func testRoundTripWithRandomKeys() throws {
        var (i, r, si, sr) = pair()
        XCTAssertEqual(i.protocolName, "Noise_XX_25519_ChaChaPoly_SHA256")
        XCTAssertNil(i.remoteStaticKey)
        XCTAssertTrue(i.isMyTurnToWrite)
        XCTAssertFalse(r.isMyTurnToWrite)

        let m1 = try i.writeMessage(payload: [])
        XCTAssertEqual(m1.count, 32, "message 1 is e only")
        XCTAssertEqual(try r.readMessage(m1), [])
        let m2 = try r.writeMessage(payload: Array("responder card".utf8))
        XCTAssertEqual(m2.count, 32 + 48 + 14 + 16)
        XCTAssertEqual(try i.readMessage(m2), Array("responder card".utf8))
        XCTAssertEqual(i.remoteStaticKey, sr.publicKey, "initiator learns the responder's static key from message 2")
        XCTAssertNil(r.remoteStaticKey)
        XCTAssertFalse(i.isComplete)
        let m3 = try i.writeMessage(payload: Array("initiator card".utf8))
        XCTAssertEqual(m3.count, 48 + 14 + 16)
        XCTAssertEqual(try r.readMessage(m3), Array("initiator card".utf8))
        XCTAssertEqual(r.remoteStaticKey, si.publicKey)

        XCTAssertTrue(i.isComplete && r.isComplete)
        XCTAssertFalse(i.isMyTurnToWrite || r.isMyTurnToWrite)
        XCTAssertEqual(i.handshakeHash, r.handshakeHash)
        var ik = try i.split()
        var rk = try r.split()
        XCTAssertEqual(ik.handshakeHash, rk.handshakeHash)
        XCTAssertEqual(ik.handshakeHash.count, 32)

        for n in 0..<3 {
            let a = try ik.send.encrypt(ad: [], plaintext: [UInt8(n)])
            XCTAssertEqual(try rk.receive.decrypt(ad: [], ciphertext: a), [UInt8(n)])
            let b = try rk.send.encrypt(ad: [], plaintext: [UInt8(n), 0xff])
            XCTAssertEqual(try ik.receive.decrypt(ad: [], ciphertext: b), [UInt8(n), 0xff])
        }
        // Directions use different keys: our own message does not decrypt as incoming.
        var probe = ik
        let own = try probe.send.encrypt(ad: [], plaintext: [7])
        XCTAssertThrowsError(try probe.receive.decrypt(ad: [], ciphertext: own))
    }

    func testBLAKE2bRoundTrip() throws {
        var i = HandshakeState<NoiseBLAKE2b>(role: .initiator, prologue: [], staticKey: .generate())
        var r = HandshakeState<NoiseBLAKE2b>(role: .responder, prologue: [], staticKey: .generate())
        XCTAssertEqual(i.protocolName, "Noise_XX_25519_ChaChaPoly_BLAKE2b")
        XCTAssertEqual(try r.readMessage(try i.writeMessage(payload: [1])), [1])
        XCTAssertEqual(try i.readMessage(try r.writeMessage(payload: [2])), [2])
        XCTAssertEqual(try r.readMessage(try i.writeMessage(payload: [3])), [3])
        let ik = try i.split()
        XCTAssertEqual(ik.handshakeHash, try r.split().handshakeHash)
        XCTAssertEqual(ik.handshakeHash.count, 64)
    }

    func testEveryTamperedByteFailsTheHandshake() throws {
        let payloads: [[UInt8]] = [[1, 1], [2, 2], [3, 3]]
        let lengths = [32 + 2, 32 + 48 + 2 + 16, 48 + 2 + 16]
        var failures = 0
        for step in 0..<3 {
            for position in 0..<lengths[step] {
                var (i, r, _, _) = pair()
                do {
                    try handshake(&i, &r, payloads: payloads) { s, m in
                        XCTAssertEqual(m.count, lengths[s])
                        if s == step { m[position] ^= 0x01 }
                    }
                    XCTFail("tampered byte \(position) of message \(step + 1) went unnoticed")
                } catch let error as NoiseError {
                    // Message 1 is unauthenticated; its tampering surfaces when message 2,
                    // bound to the handshake hash, fails to decrypt.
                    XCTAssertTrue([.decryptionFailed, .lowOrderPoint].contains(error), "\(error)")
                    XCTAssertFalse(i.isComplete && r.isComplete)
                    failures += 1
                }
            }
        }
        XCTAssertEqual(failures, lengths.reduce(0, +))
    }

    func testTruncatedAndExtendedMessagesFail() throws {
        for step in 0..<3 {
            for edit in 0..<2 {
                var (i, r, _, _) = pair()
                XCTAssertThrowsError(
                    try handshake(&i, &r) { s, m in
                        if s == step { if edit == 0 { m.removeLast() } else { m.append(0) } }
                    }, "message \(step + 1) edit \(edit)")
            }
        }
        // Too short to even hold the fields.
        var (_, r, _, _) = pair()
        assertThrows(.messageTooShort, try r.readMessage([UInt8](repeating: 9, count: 31)))
    }

    func testWrongPrologueFails() throws {
        var (i, r, _, _) = pair(initiatorPrologue: Array("parley v1".utf8), responderPrologue: Array("parley v2".utf8))
        XCTAssertEqual(try r.readMessage(try i.writeMessage(payload: [])), [])
        let m2 = try r.writeMessage(payload: [])
        assertThrows(.decryptionFailed, try i.readMessage(m2))
    }

    func testFailedReadAbortsTheHandshake() throws {
        var (i, r, _, _) = pair()
        _ = try r.readMessage(try i.writeMessage(payload: []))
        var m2 = try r.writeMessage(payload: [])
        m2[40] ^= 0x80
        assertThrows(.decryptionFailed, try i.readMessage(m2))
        m2[40] ^= 0x80
        assertThrows(.handshakeAborted, try i.readMessage(m2))
        assertThrows(.handshakeAborted, try i.writeMessage(payload: []))
        assertThrows(.handshakeAborted, try i.split())
        XCTAssertFalse(i.isMyTurnToWrite)
        XCTAssertFalse(i.isComplete)
    }

    func testOversizeMessagesAreRefused() throws {
        var (i, r, _, _) = pair()
        // Message 1 is 32 bytes of e plus the plaintext payload.
        assertThrows(.messageTooLong(65536), try i.writeMessage(payload: [UInt8](repeating: 1, count: 65535 - 32 + 1)))
        assertThrows(.messageTooLong(65536), try r.readMessage([UInt8](repeating: 1, count: 65536)))
        // Both refusals left the states unchanged: the largest legal message still works.
        let m1 = try i.writeMessage(payload: [UInt8](repeating: 1, count: 65535 - 32))
        XCTAssertEqual(m1.count, NoiseConstants.maxMessageLength)
        XCTAssertEqual(try r.readMessage(m1).count, 65535 - 32)
        // Message 2: e (32) + encrypted s (48) + payload + tag (16).
        assertThrows(.messageTooLong(65536), try r.writeMessage(payload: [UInt8](repeating: 2, count: 65535 - 96 + 1)))
        let m2 = try r.writeMessage(payload: [UInt8](repeating: 2, count: 65535 - 96))
        XCTAssertEqual(m2.count, NoiseConstants.maxMessageLength)
        XCTAssertEqual(try i.readMessage(m2).count, 65535 - 96)
    }

    func testOutOfTurnCallsThrowAndChangeNothing() throws {
        var (i, r, _, _) = pair()
        assertThrows(.wrongTurn, try r.writeMessage(payload: []))
        assertThrows(.wrongTurn, try i.readMessage([UInt8](repeating: 9, count: 32)))
        let m1 = try i.writeMessage(payload: [])
        assertThrows(.wrongTurn, try i.writeMessage(payload: []))
        XCTAssertEqual(try r.readMessage(m1), [])
        assertThrows(.wrongTurn, try r.readMessage(m1))
        try handshakeRest(&i, &r)
        assertThrows(.handshakeAlreadyComplete, try i.writeMessage(payload: []))
        assertThrows(.handshakeAlreadyComplete, try r.readMessage([]))
        XCTAssertTrue(i.isComplete)
        _ = try i.split()
    }

    private func handshakeRest(_ i: inout XX, _ r: inout XX) throws {
        _ = try i.readMessage(try r.writeMessage(payload: []))
        _ = try r.readMessage(try i.writeMessage(payload: []))
    }

    func testLowOrderEphemeralKeysAreRejected() throws {
        // Points of small order on Curve25519 (u = 0, u = 1, and an order-8 point), for
        // which X25519 yields all zeros whatever the private key.
        let lowOrder: [[UInt8]] = [
            [UInt8](repeating: 0, count: 32),
            [1] + [UInt8](repeating: 0, count: 31),
            Sodium.fromHex("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800")!
        ]
        for point in lowOrder {
            // As message 1: the responder's first DH with it (ee, writing message 2)
            // refuses it, so nothing is sent back, and the handshake stays aborted.
            var (i, r, _, _) = pair()
            _ = try r.readMessage(point)
            assertThrows(.lowOrderPoint, try r.writeMessage(payload: []))
            assertThrows(.handshakeAborted, try r.writeMessage(payload: []))

            // As the responder's e in message 2: the initiator refuses it.
            _ = try i.writeMessage(payload: [])
            var fake = point + [UInt8](repeating: 0, count: 48 + 16)
            assertThrows(.lowOrderPoint, try i.readMessage(fake))
            Sodium.wipe(&fake)
        }
    }

    func testXXpsk3RoundTrip() throws {
        let psk = SecretBytes.random(32)
        var (i, r, si, sr) = pair(initiatorPSK: psk, responderPSK: psk)
        XCTAssertEqual(i.protocolName, "Noise_XXpsk3_25519_ChaChaPoly_SHA256")
        let m1 = try i.writeMessage(payload: [1, 2, 3])
        XCTAssertEqual(m1.count, 32 + 3 + 16, "in psk mode e already keys the cipher, so payload 1 is encrypted")
        XCTAssertEqual(try r.readMessage(m1), [1, 2, 3])
        XCTAssertEqual(try i.readMessage(try r.writeMessage(payload: [4])), [4])
        XCTAssertEqual(try r.readMessage(try i.writeMessage(payload: [5])), [5])
        XCTAssertEqual(i.remoteStaticKey, sr.publicKey)
        XCTAssertEqual(r.remoteStaticKey, si.publicKey)
        var ik = try i.split()
        var rk = try r.split()
        XCTAssertEqual(ik.handshakeHash, rk.handshakeHash)
        XCTAssertEqual(try rk.receive.decrypt(ad: [], ciphertext: try ik.send.encrypt(ad: [], plaintext: [9])), [9])

        // The same keys without psk give a different protocol and hash.
        var (pi, pr, _, _) = pair()
        XCTAssertEqual(try handshake(&pi, &pr), [[1], [2, 2], [3, 3, 3]])
        XCTAssertNotEqual(try pi.split().handshakeHash, ik.handshakeHash)
    }

    func testMismatchedPSKFails() throws {
        var (i, r, _, _) = pair(initiatorPSK: SecretBytes.random(32), responderPSK: SecretBytes.random(32))
        XCTAssertEqual(try r.readMessage(try i.writeMessage(payload: [1])), [1])
        XCTAssertEqual(try i.readMessage(try r.writeMessage(payload: [2])), [2])
        // The psk is mixed in at the end of message 3, so its payload fails to decrypt.
        assertThrows(.decryptionFailed, try r.readMessage(try i.writeMessage(payload: [3])))
        XCTAssertFalse(r.isComplete)

        // psk on one side only: the protocol names differ, so message 1 already fails.
        var (a, b, _, _) = pair(initiatorPSK: SecretBytes.random(32), responderPSK: nil)
        XCTAssertThrowsError(try handshake(&a, &b))
    }

    func testPSKMustBe32Bytes() throws {
        var (i, _, _, _) = pair(initiatorPSK: SecretBytes.random(16), responderPSK: nil)
        assertThrows(.invalidPresharedKeyLength(16), try i.writeMessage(payload: []))
    }

    func testSplitOnlyAfterCompletionAndOnlyOnce() throws {
        var (i, r, _, _) = pair()
        assertThrows(.handshakeNotComplete, try i.split())
        _ = try r.readMessage(try i.writeMessage(payload: []))
        assertThrows(.handshakeNotComplete, try i.split())
        assertThrows(.handshakeNotComplete, try r.split())
        try handshakeRest(&i, &r)
        _ = try i.split()
        assertThrows(.alreadySplit, try i.split())
        assertThrows(.handshakeAlreadyComplete, try i.writeMessage(payload: []))
        XCTAssertEqual(i.handshakeHash.count, 32, "the public handshake hash survives split")
    }

    func testErrorsDescribeThemselves() {
        let all: [NoiseError] = [
            .decryptionFailed, .nonceExhausted, .messageTooLong(70000), .messageTooShort,
            .handshakeNotComplete, .handshakeAlreadyComplete, .wrongTurn, .lowOrderPoint,
            .invalidPublicKey, .handshakeAborted, .alreadySplit, .invalidPresharedKeyLength(3)
        ]
        XCTAssertEqual(Set(all.map(\.description)).count, all.count)
        XCTAssertTrue(NoiseError.messageTooLong(70000).description.contains("70000"))
    }
}
