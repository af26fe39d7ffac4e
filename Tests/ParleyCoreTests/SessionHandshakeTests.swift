import ParleyCore
import XCTest

/// Parley's handshake (XX with cards) between two real `SessionHandshake`s, and every
/// refusal it must produce. Keys are random; cards are issued with `Card.issue`.
final class SessionHandshakeTests: XCTestCase {
    /// Unix seconds used as "now" by every handshake in this file.
    static let now: UInt64 = 1_800_000_000

    /// One node's long-term material.
    struct Node {
        let identity: IdentityKeyPair
        let noise: NoiseStaticKeyPair
        let card: Card
        let bootID: [UInt8]

        /// A node whose card names `cardNoiseKey` (default: its own Noise key).
        static func make(
            name: String = "Node", identity: IdentityKeyPair = .generate(),
            cardNoiseKey: NoisePublicKey? = nil, expiresAt: UInt64? = nil,
            issuedAt: UInt64 = 1_700_000_000
        ) throws -> Node {
            let noise = NoiseStaticKeyPair.generate()
            let card = try Card.issue(
                identity: identity, noiseKey: cardNoiseKey ?? noise.publicKey,
                displayName: name, hostName: "\(name.lowercased()).local",
                issuedAt: issuedAt, sequence: 1, expiresAt: expiresAt)
            return Node(
                identity: identity, noise: noise, card: card,
                bootID: Sodium.randomBytes(HandshakePayload.bootIDLength))
        }

        func handshake(
            _ role: SessionHandshake.Role, psk: SecretBytes? = nil, now: UInt64 = SessionHandshakeTests.now,
            prologue: [UInt8] = ProtocolVersion.prologue
        ) -> SessionHandshake {
            SessionHandshake(
                role: role, localCard: card, staticKey: noise, bootID: bootID,
                presharedKey: psk, now: now, prologue: prologue)
        }
    }

    /// Drives both sides to completion; `tamper` may rewrite message `index` (0, 1, 2) in flight.
    func run(
        _ i: inout SessionHandshake, _ r: inout SessionHandshake,
        tamper: (Int, inout [UInt8]) -> Void = { _, _ in }
    )
        throws -> (initiator: SessionHandshake.Established, responder: SessionHandshake.Established)
    {
        var m1 = try i.start()
        tamper(0, &m1)
        guard case .send(var m2) = try r.receive(m1) else {
            XCTFail("responder must answer message 1")
            throw Stop()
        }
        tamper(1, &m2)
        guard case .established(let final?, let initiator) = try i.receive(m2) else {
            XCTFail("initiator must finish with message 3")
            throw Stop()
        }
        var m3 = final
        tamper(2, &m3)
        guard case .established(nil, let responder) = try r.receive(m3) else {
            XCTFail("responder must finish without a message")
            throw Stop()
        }
        return (initiator, responder)
    }

    struct Stop: Error {}

    func assertFails(
        _ expected: SessionHandshakeError, file: StaticString = #filePath, line: UInt = #line,
        _ body: () throws -> Void
    ) {
        XCTAssertThrowsError(try body(), file: file, line: line) {
            XCTAssertEqual($0 as? SessionHandshakeError, expected, "\($0)", file: file, line: line)
        }
    }

    static func psk(_ byte: UInt8) -> SecretBytes {
        var b = [UInt8](repeating: byte, count: 32)
        return SecretBytes(consuming: &b)
    }

    // MARK: - Success

    func testHandshakeCompletesAndBothSidesLearnTheOtherCard() throws {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob")
        var i = alice.handshake(.initiator)
        var r = bob.handshake(.responder)
        var (ie, re) = try run(&i, &r)

        XCTAssertEqual(ie.role, .initiator)
        XCTAssertEqual(re.role, .responder)
        XCTAssertEqual(ie.remoteCard, bob.card)
        XCTAssertEqual(re.remoteCard, alice.card)
        XCTAssertEqual(ie.remoteCard.noiseKey, bob.noise.publicKey)
        XCTAssertEqual(ie.remoteBootID, bob.bootID)
        XCTAssertEqual(re.remoteBootID, alice.bootID)
        XCTAssertEqual(ie.handshakeHash, re.handshakeHash)
        XCTAssertEqual(ie.handshakeHash.count, 32)

        for n in 0..<5 {
            let a = Array("alice \(n)".utf8)
            let b = Array("bob \(n)".utf8)
            XCTAssertEqual(try re.transport.open(try ie.transport.seal(a)), a)
            XCTAssertEqual(try ie.transport.open(try re.transport.seal(b)), b)
        }
        XCTAssertEqual(ie.transport.messagesSent, 5)
        XCTAssertEqual(re.transport.messagesReceived, 5)
    }

    func testHandshakeHashDiffersBetweenSessions() throws {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob")
        var i1 = alice.handshake(.initiator)
        var r1 = bob.handshake(.responder)
        var i2 = alice.handshake(.initiator)
        var r2 = bob.handshake(.responder)
        let first = try run(&i1, &r1)
        let second = try run(&i2, &r2)
        XCTAssertNotEqual(
            first.initiator.handshakeHash, second.initiator.handshakeHash,
            "fresh ephemeral keys make every session unique")
    }

    func testMessagesAfterCompletionAreUnexpected() throws {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob")
        var i = alice.handshake(.initiator)
        var r = bob.handshake(.responder)
        _ = try run(&i, &r)
        XCTAssertThrowsError(try i.start(), "the initiator cannot start twice")
        assertFails(.unexpectedMessage) { _ = try i.receive([UInt8](repeating: 0, count: 64)) }
        assertFails(.unexpectedMessage) { _ = try r.receive([UInt8](repeating: 0, count: 64)) }
    }

    // MARK: - Card checks

    func testCardNamingAnotherNoiseKeyIsRefusedByTheInitiator() throws {
        // Bob's card is validly signed by Bob but names a Noise key Bob's handshake does not use.
        let other = NoiseStaticKeyPair.generate()
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob", cardNoiseKey: other.publicKey)
        var i = alice.handshake(.initiator)
        var r = bob.handshake(.responder)
        assertFails(.cardKeyMismatch) { _ = try run(&i, &r) }
    }

    func testCardNamingAnotherNoiseKeyIsRefusedByTheResponder() throws {
        let other = NoiseStaticKeyPair.generate()
        let alice = try Node.make(name: "Alice", cardNoiseKey: other.publicKey)
        let bob = try Node.make(name: "Bob")
        var i = alice.handshake(.initiator)
        var r = bob.handshake(.responder)
        assertFails(.cardKeyMismatch) { _ = try run(&i, &r) }
    }

    func testStolenCardIsRefused() throws {
        // Mallory presents Bob's real card with her own Noise key: the signature verifies,
        // but the handshake proves Mallory's key, not the card's.
        let bob = try Node.make(name: "Bob")
        let mallory = Node(
            identity: .generate(), noise: .generate(), card: bob.card,
            bootID: Sodium.randomBytes(HandshakePayload.bootIDLength))
        let alice = try Node.make(name: "Alice")
        var i = alice.handshake(.initiator)
        var r = mallory.handshake(.responder)
        assertFails(.cardKeyMismatch) { _ = try run(&i, &r) }
    }

    func testExpiredCardIsRefusedByTheInitiator() throws {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob", expiresAt: Self.now - 1)
        var i = alice.handshake(.initiator)
        var r = bob.handshake(.responder)
        assertFails(.cardExpired) { _ = try run(&i, &r) }
    }

    func testExpiredCardIsRefusedByTheResponder() throws {
        let alice = try Node.make(name: "Alice", expiresAt: Self.now - 1)
        let bob = try Node.make(name: "Bob")
        var i = alice.handshake(.initiator)
        var r = bob.handshake(.responder)
        assertFails(.cardExpired) { _ = try run(&i, &r) }
    }

    func testCardExpiringExactlyNowIsRefusedAndOneSecondLaterIsAccepted() throws {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob", expiresAt: Self.now)
        var i = alice.handshake(.initiator)
        var r = bob.handshake(.responder)
        assertFails(.cardExpired) { _ = try run(&i, &r) }

        var i2 = alice.handshake(.initiator, now: Self.now - 1)
        var r2 = bob.handshake(.responder)
        XCTAssertEqual(try run(&i2, &r2).initiator.remoteCard, bob.card)
    }

    func testConnectingToYourselfIsRefused() throws {
        // The same identity on both sides, as when a node dials its own mDNS advertisement.
        let identity = IdentityKeyPair.generate()
        let a = try Node.make(name: "Same", identity: identity)
        let b = try Node.make(name: "Same", identity: identity)
        var i = a.handshake(.initiator)
        var r = b.handshake(.responder)
        assertFails(.connectedToSelf) { _ = try run(&i, &r) }

        // Even with one and the same Noise key and card.
        var i2 = a.handshake(.initiator)
        var r2 = a.handshake(.responder)
        assertFails(.connectedToSelf) { _ = try run(&i2, &r2) }
    }

    func testCardWithBadSignatureIsRefused() throws {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob")
        var card = bob.card.encoded()
        card[card.count - 1] ^= 0x01
        let payload = HandshakePayload(card: card, bootID: bob.bootID).encoded()
        var i = alice.handshake(.initiator)
        var r = HandshakeState<NoiseSHA256>(role: .responder, prologue: ProtocolVersion.prologue, staticKey: bob.noise)
        _ = try r.readMessage(try i.start())
        let m2 = try r.writeMessage(payload: payload)
        assertFails(.invalidCard(.badSignature)) { _ = try i.receive(m2) }
    }

    // MARK: - Malformed payloads (a raw Noise peer injects them)

    /// A raw responder answers a real initiator with `payload` in message 2.
    func initiatorReceiving(payload: [UInt8]) throws -> (SessionHandshake, [UInt8]) {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob")
        var i = alice.handshake(.initiator)
        var r = HandshakeState<NoiseSHA256>(role: .responder, prologue: ProtocolVersion.prologue, staticKey: bob.noise)
        _ = try r.readMessage(try i.start())
        return (i, try r.writeMessage(payload: payload))
    }

    /// A raw initiator sends `payload` in message 3 to a real responder.
    func responderReceiving(payload: [UInt8]) throws -> (SessionHandshake, [UInt8]) {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob")
        var i = HandshakeState<NoiseSHA256>(
            role: .initiator, prologue: ProtocolVersion.prologue, staticKey: alice.noise)
        var r = bob.handshake(.responder)
        guard case .send(let m2) = try r.receive(try i.writeMessage(payload: [])) else { throw Stop() }
        _ = try i.readMessage(m2)
        return (r, try i.writeMessage(payload: payload))
    }

    func malformedPayloads() throws -> [(String, [UInt8])] {
        let bob = try Node.make(name: "Bob")
        let card = bob.card.encoded()
        let boot = bob.bootID
        func field(_ t: UInt8, _ v: [UInt8]) -> [UInt8] { [t, UInt8(v.count >> 8), UInt8(v.count & 0xff)] + v }
        return [
            ("empty", []),
            ("no card", field(0x02, boot)),
            ("no boot id", field(0x01, card)),
            ("card repeated", field(0x01, card) + field(0x01, card) + field(0x02, boot)),
            ("boot id repeated", field(0x01, card) + field(0x02, boot) + field(0x02, boot)),
            ("short boot id", field(0x01, card) + field(0x02, Array(boot.dropLast()))),
            ("long boot id", field(0x01, card) + field(0x02, boot + [0])),
            ("truncated field", field(0x01, card) + field(0x02, boot).dropLast()),
            ("truncated header", field(0x01, card) + field(0x02, boot) + [0x07, 0x00]),
            ("garbage", Array("this is not a handshake payload at all".utf8)),
            ("too long", field(0x01, card) + field(0x02, boot) + field(0x09, [UInt8](repeating: 0, count: 2_048)))
        ]
    }

    func testMalformedPayloadInMessage2IsRefused() throws {
        for (name, payload) in try malformedPayloads() {
            var (i, m2) = try initiatorReceiving(payload: payload)
            XCTAssertThrowsError(try i.receive(m2), name) { error in
                guard case .malformedPayload = error as? SessionHandshakeError else {
                    return XCTFail("\(name): expected malformedPayload, got \(error)")
                }
            }
            // And it stays failed.
            XCTAssertThrowsError(try i.receive(m2), name)
        }
    }

    func testMalformedPayloadInMessage3IsRefused() throws {
        for (name, payload) in try malformedPayloads() {
            var (r, m3) = try responderReceiving(payload: payload)
            XCTAssertThrowsError(try r.receive(m3), name) { error in
                guard case .malformedPayload = error as? SessionHandshakeError else {
                    return XCTFail("\(name): expected malformedPayload, got \(error)")
                }
            }
        }
    }

    func testRawPeerWithWellFormedPayloadIsAccepted() throws {
        // Guards the tests above: a raw peer sending a valid payload gets through, so the
        // refusals come from the payload alone. An unknown field is skipped.
        let bob = try Node.make(name: "Bob")
        var payload = HandshakePayload(card: bob.card.encoded(), bootID: bob.bootID).encoded()
        payload += [0x7f, 0x00, 0x03, 1, 2, 3]
        let alice = try Node.make(name: "Alice")
        var i = alice.handshake(.initiator)
        var r = HandshakeState<NoiseSHA256>(role: .responder, prologue: ProtocolVersion.prologue, staticKey: bob.noise)
        _ = try r.readMessage(try i.start())
        guard case .established(let m3?, let est) = try i.receive(try r.writeMessage(payload: payload)) else {
            return XCTFail("expected the initiator to finish")
        }
        XCTAssertEqual(est.remoteCard, bob.card)
        XCTAssertEqual(est.remoteBootID, bob.bootID)
        let alicePayload = try HandshakePayload.decode(try r.readMessage(m3))
        XCTAssertEqual(alicePayload.card, alice.card.encoded())
        XCTAssertEqual(alicePayload.bootID, alice.bootID)
    }

    func testPayloadEncodingIsTheDocumentedTLV() throws {
        let payload = HandshakePayload(card: [0xaa, 0xbb, 0xcc], bootID: Array(0..<16))
        XCTAssertEqual(payload.encoded(), [0x01, 0x00, 0x03, 0xaa, 0xbb, 0xcc, 0x02, 0x00, 0x10] + Array(0..<16))
        XCTAssertEqual(try HandshakePayload.decode(payload.encoded()), payload)
        // Field order does not matter.
        let swapped: [UInt8] = [0x02, 0x00, 0x10] + Array(0..<16) + [0x01, 0x00, 0x03, 0xaa, 0xbb, 0xcc]
        XCTAssertEqual(try HandshakePayload.decode(swapped), payload)
    }

    func testDocumentedHandshakePayloadMatchesCode() throws {
        let payload = HandshakePayload(card: try ExampleKeys.aliceCard().encoded(), bootID: Array(0xa0...0xaf))
        let hex = try ProtocolDoc.hexExample("handshake-payload")
        XCTAssertEqual(Sodium.hex(payload.encoded()), hex)
        XCTAssertEqual(try HandshakePayload.decode(try XCTUnwrap(Sodium.fromHex(hex))), payload)
    }

    // MARK: - Tampering, prologue, turn order

    func testEveryTamperedByteFailsTheHandshake() throws {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob")
        // Lengths of the three messages for these cards.
        var i0 = alice.handshake(.initiator)
        var r0 = bob.handshake(.responder)
        var lengths = [Int](repeating: 0, count: 3)
        _ = try run(&i0, &r0) { index, m in lengths[index] = m.count }
        XCTAssertEqual(lengths[0], 32, "message 1 is the ephemeral key alone")

        for index in 0..<3 {
            for position in 0..<lengths[index] {
                var i = alice.handshake(.initiator)
                var r = bob.handshake(.responder)
                XCTAssertThrowsError(
                    try run(&i, &r) { k, m in if k == index { m[position] ^= 0x40 } },
                    "message \(index + 1) byte \(position)"
                ) { error in
                    guard case .noise = error as? SessionHandshakeError else {
                        return XCTFail("message \(index + 1) byte \(position): expected a Noise failure, got \(error)")
                    }
                }
            }
        }
    }

    func testTruncatedAndExtendedMessagesFail() throws {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob")
        for index in 0..<3 {
            for change in [{ (m: inout [UInt8]) in m.removeLast() }, { (m: inout [UInt8]) in m.append(0) }] {
                var i = alice.handshake(.initiator)
                var r = bob.handshake(.responder)
                XCTAssertThrowsError(try run(&i, &r) { k, m in if k == index { change(&m) } }, "message \(index + 1)")
            }
        }
    }

    func testWrongPrologueFails() throws {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob")
        var i = alice.handshake(.initiator, prologue: Array("parley/2 Noise_XX_25519_ChaChaPoly_SHA256".utf8))
        var r = bob.handshake(.responder)
        assertFails(.noise(.decryptionFailed)) { _ = try run(&i, &r) }
    }

    func testMessageOutOfTurnIsUnexpected() throws {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob")
        // The initiator must send first: anything it receives before start() is out of turn.
        var early = alice.handshake(.initiator)
        assertFails(.unexpectedMessage) { _ = try early.receive([UInt8](repeating: 9, count: 32)) }

        // The responder never calls start().
        var r = bob.handshake(.responder)
        assertFails(.unexpectedMessage) { _ = try r.start() }
    }

    func testOutOfTurnMessageFailsTheHandshakeForGood() throws {
        // An initiator that got a message before sending its own must not carry on.
        let alice = try Node.make(name: "Alice")
        var i = alice.handshake(.initiator)
        assertFails(.unexpectedMessage) { _ = try i.receive([UInt8](repeating: 9, count: 32)) }
        assertFails(.unexpectedMessage) { _ = try i.start() }

        // Likewise a responder that gets message 1 twice (the second where message 3 belongs).
        let bob = try Node.make(name: "Bob")
        var i2 = alice.handshake(.initiator)
        var r = bob.handshake(.responder)
        let m1 = try i2.start()
        guard case .send(let m2) = try r.receive(m1) else { return XCTFail() }
        XCTAssertThrowsError(try r.receive(m1))
        guard case .established(let m3?, _) = try i2.receive(m2) else { return XCTFail() }
        assertFails(.unexpectedMessage) { _ = try r.receive(m3) }
    }

    func testEveryCallAfterAFailureThrows() throws {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob", expiresAt: Self.now - 1)
        var i = alice.handshake(.initiator)
        var r = bob.handshake(.responder)
        let m1 = try i.start()
        guard case .send(let m2) = try r.receive(m1) else { return XCTFail() }
        assertFails(.cardExpired) { _ = try i.receive(m2) }
        assertFails(.unexpectedMessage) { _ = try i.receive(m2) }
        assertFails(.unexpectedMessage) { _ = try i.start() }

        // Responder side: a tampered message 3 fails it, then the genuine one is refused too.
        let carol = try Node.make(name: "Carol")
        var i2 = carol.handshake(.initiator)
        var r2 = alice.handshake(.responder)
        guard case .send(let n2) = try r2.receive(try i2.start()),
            case .established(let n3?, _) = try i2.receive(n2)
        else { return XCTFail() }
        var bad = n3
        bad[5] ^= 1
        XCTAssertThrowsError(try r2.receive(bad))
        assertFails(.unexpectedMessage) { _ = try r2.receive(n3) }
    }

    // MARK: - XXpsk0 (optional network key)

    func testSamePresharedKeyWorks() throws {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob")
        var i = alice.handshake(.initiator, psk: Self.psk(7))
        var r = bob.handshake(.responder, psk: Self.psk(7))
        var (ie, re) = try run(&i, &r)
        XCTAssertEqual(ie.remoteCard, bob.card)
        XCTAssertEqual(re.remoteCard, alice.card)
        XCTAssertEqual(ie.handshakeHash, re.handshakeHash)
        XCTAssertEqual(try re.transport.open(try ie.transport.seal([1, 2, 3])), [1, 2, 3])
        XCTAssertEqual(try ie.transport.open(try re.transport.seal([4])), [4])
    }

    func testPresharedKeyChangesTheSession() throws {
        // In XXpsk0 the psk token keys the cipher before `e`, so message 1's empty payload
        // carries a 16-byte tag: 48 bytes instead of 32 (docs/PROTOCOL.md says so).
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob")
        var i = alice.handshake(.initiator, psk: Self.psk(7))
        var r = bob.handshake(.responder, psk: Self.psk(7))
        var first = 0
        _ = try run(&i, &r) { k, m in if k == 0 { first = m.count } }
        XCTAssertEqual(first, 32 + 16)
    }

    func testDifferentPresharedKeysFail() throws {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob")
        var i = alice.handshake(.initiator, psk: Self.psk(7))
        var r = bob.handshake(.responder, psk: Self.psk(8))
        XCTAssertThrowsError(try run(&i, &r)) { error in
            guard case .noise = error as? SessionHandshakeError else { return XCTFail("\(error)") }
        }
    }

    func testPresharedKeyOnOneSideOnlyFails() throws {
        let alice = try Node.make(name: "Alice")
        let bob = try Node.make(name: "Bob")
        var i1 = alice.handshake(.initiator, psk: Self.psk(7))
        var r1 = bob.handshake(.responder)
        XCTAssertThrowsError(try run(&i1, &r1), "only the initiator has the network key")
        var i2 = alice.handshake(.initiator)
        var r2 = bob.handshake(.responder, psk: Self.psk(7))
        XCTAssertThrowsError(try run(&i2, &r2), "only the responder has the network key")
    }

    /// psk0: a responder that has the network key answers nobody without it, so an
    /// outsider never gets message 2 (the responder's static key and card).
    func testResponderRevealsNothingToAnOutsider() throws {
        let alice = try Node.make(name: "Alice")
        let mallory = try Node.make(name: "Mallory")
        var outsider = mallory.handshake(.initiator)
        var keyed = alice.handshake(.responder, psk: Self.psk(7))
        let m1 = try outsider.start()
        XCTAssertThrowsError(try keyed.receive(m1), "the keyed responder must not produce message 2")
        var wrongKey = mallory.handshake(.initiator, psk: Self.psk(9))
        var keyed2 = alice.handshake(.responder, psk: Self.psk(7))
        XCTAssertThrowsError(try keyed2.receive(try wrongKey.start()))
    }

    func testErrorsDescribeThemselves() {
        let all: [SessionHandshakeError] = [
            .noise(.decryptionFailed), .malformedPayload("x"), .invalidCard(.badSignature),
            .cardKeyMismatch, .cardExpired, .connectedToSelf, .unexpectedMessage, .timedOut
        ]
        XCTAssertEqual(Set(all.map(\.description)).count, all.count)
    }
}
