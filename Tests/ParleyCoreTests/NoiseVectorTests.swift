import Foundation
import ParleyCore
import XCTest

/// One entry of a cacophony/snow-format vector file (see Fixtures/noise-xx.SOURCES.md).
private struct NoiseVector: Decodable {
    struct Message: Decodable {
        let payload: String
        let ciphertext: String
    }
    let protocolName: String
    let initPrologue: String
    let initStatic: String
    let initEphemeral: String
    let initPsks: [String]?
    let respPrologue: String
    let respStatic: String
    let respEphemeral: String
    let respPsks: [String]?
    let handshakeHash: String?
    let messages: [Message]

    enum CodingKeys: String, CodingKey {
        case protocolName = "protocol_name", initPrologue = "init_prologue", initStatic = "init_static"
        case initEphemeral = "init_ephemeral", initPsks = "init_psks", respPrologue = "resp_prologue"
        case respStatic = "resp_static", respEphemeral = "resp_ephemeral", respPsks = "resp_psks"
        case handshakeHash = "handshake_hash", messages
    }
}

private struct NoiseVectorFile: Decodable {
    let vectors: [NoiseVector]
}

final class NoiseVectorTests: XCTestCase {
    /// XX has three handshake messages; the rest of each vector is transport traffic.
    private let handshakeMessageCount = 3

    private func loadVectors(_ name: String) throws -> [NoiseVector] {
        let url = try XCTUnwrap(
            Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"),
            "fixture \(name).json missing from the test bundle")
        return try JSONDecoder().decode(NoiseVectorFile.self, from: Data(contentsOf: url)).vectors
    }

    /// The four official XX vectors (cacophony and snow), SHA256 and BLAKE2b.
    func testOfficialXXVectors() throws {
        let vectors = try loadVectors("noise-xx")
        guard vectors.count >= 4 else {
            return XCTFail("noise-xx.json must hold the 4 XX vectors, found \(vectors.count)")
        }
        XCTAssertEqual(try run(vectors), 4)
        XCTAssertEqual(vectors.filter { $0.protocolName.hasSuffix("SHA256") }.count, 2)
        XCTAssertEqual(vectors.filter { $0.protocolName.hasSuffix("BLAKE2b") }.count, 2)
        XCTAssertEqual(
            vectors.filter { $0.handshakeHash != nil }.count, 2, "the cacophony vectors carry a handshake hash")
    }

    /// XXpsk3 vectors generated with an independent implementation (noiseprotocol 0.3.1).
    func testXXpsk3CrossImplementationVectors() throws {
        let vectors = try loadVectors("noise-xxpsk3")
        guard vectors.count >= 2 else {
            return XCTFail("noise-xxpsk3.json must hold 2 vectors, found \(vectors.count)")
        }
        XCTAssertEqual(try run(vectors), 2)
    }

    /// XXpsk0 (Parley's network-key pattern), from the same independent implementation.
    func testXXpsk0CrossImplementationVectors() throws {
        let vectors = try loadVectors("noise-xxpsk0")
        guard vectors.count >= 2 else {
            return XCTFail("noise-xxpsk0.json must hold 2 vectors, found \(vectors.count)")
        }
        XCTAssertEqual(try run(vectors), 2)
    }

    /// Runs every vector through the hash it names; returns how many ran.
    private func run(_ vectors: [NoiseVector]) throws -> Int {
        var ran = 0
        for vector in vectors {
            switch vector.protocolName.split(separator: "_").last {
            case "SHA256": try run(vector, NoiseSHA256.self)
            case "BLAKE2b": try run(vector, NoiseBLAKE2b.self)
            default:
                XCTFail("unexpected protocol \(vector.protocolName)")
                continue
            }
            ran += 1
        }
        return ran
    }

    private func bytes(_ hex: String, _ file: StaticString = #filePath, _ line: UInt = #line) throws -> [UInt8] {
        try XCTUnwrap(Sodium.fromHex(hex), "bad hex in fixture", file: file, line: line)
    }

    private func secret(_ hex: String) throws -> SecretBytes {
        var b = try bytes(hex)
        return SecretBytes(consuming: &b)
    }

    private func psk(_ list: [String]?) throws -> SecretBytes? {
        guard let list, !list.isEmpty else { return nil }
        XCTAssertEqual(list.count, 1, "XXpsk0/XXpsk3 take exactly one psk")
        return try secret(list[0])
    }

    private func placement(_ protocolName: String) -> NoisePresharedKeyPlacement {
        protocolName.contains("psk0") ? .zero : .three
    }

    private func run<H: NoiseHash>(_ v: NoiseVector, _: H.Type) throws {
        let name = v.protocolName
        let initiatorStatic = try NoiseStaticKeyPair(privateKey: secret(v.initStatic))
        let responderStatic = try NoiseStaticKeyPair(privateKey: secret(v.respStatic))
        var initiator = HandshakeState<H>(
            role: .initiator, prologue: try bytes(v.initPrologue), staticKey: initiatorStatic,
            ephemeralKey: try NoiseEphemeralKeyPair(privateKey: secret(v.initEphemeral)),
            presharedKey: try psk(v.initPsks), presharedKeyPlacement: placement(name))
        var responder = HandshakeState<H>(
            role: .responder, prologue: try bytes(v.respPrologue), staticKey: responderStatic,
            ephemeralKey: try NoiseEphemeralKeyPair(privateKey: secret(v.respEphemeral)),
            presharedKey: try psk(v.respPsks), presharedKeyPlacement: placement(name))
        XCTAssertEqual(initiator.protocolName, name)
        XCTAssertEqual(responder.protocolName, name)
        XCTAssertGreaterThan(v.messages.count, handshakeMessageCount, "\(name): vector has no transport messages")

        var initiatorKeys: TransportKeys?
        var responderKeys: TransportKeys?
        for (i, m) in v.messages.enumerated() {
            let payload = try bytes(m.payload)
            let expected = try bytes(m.ciphertext)
            let initiatorSends = i % 2 == 0  // direction alternates for the whole list
            let sent: [UInt8]
            let received: [UInt8]
            if i < handshakeMessageCount {
                XCTAssertEqual(initiator.isMyTurnToWrite, initiatorSends, "\(name) message \(i)")
                XCTAssertEqual(responder.isMyTurnToWrite, !initiatorSends, "\(name) message \(i)")
                if initiatorSends {
                    sent = try initiator.writeMessage(payload: payload)
                    received = try responder.readMessage(sent)
                } else {
                    sent = try responder.writeMessage(payload: payload)
                    received = try initiator.readMessage(sent)
                }
                if i == handshakeMessageCount - 1 {
                    XCTAssertTrue(initiator.isComplete && responder.isComplete, "\(name): complete after 3 messages")
                    XCTAssertEqual(initiator.remoteStaticKey, responderStatic.publicKey, name)
                    XCTAssertEqual(responder.remoteStaticKey, initiatorStatic.publicKey, name)
                    initiatorKeys = try initiator.split()
                    responderKeys = try responder.split()
                }
            } else {
                guard var ik = initiatorKeys, var rk = responderKeys else {
                    return XCTFail("\(name): no transport keys")
                }
                if initiatorSends {
                    sent = try ik.send.encrypt(ad: [], plaintext: payload)
                    received = try rk.receive.decrypt(ad: [], ciphertext: sent)
                } else {
                    sent = try rk.send.encrypt(ad: [], plaintext: payload)
                    received = try ik.receive.decrypt(ad: [], ciphertext: sent)
                }
                initiatorKeys = ik
                responderKeys = rk
            }
            XCTAssertEqual(Sodium.hex(sent), Sodium.hex(expected), "\(name) message \(i) ciphertext")
            XCTAssertEqual(received, payload, "\(name) message \(i) payload")
        }

        let ik = try XCTUnwrap(initiatorKeys, name)
        let rk = try XCTUnwrap(responderKeys, name)
        XCTAssertEqual(ik.handshakeHash, rk.handshakeHash, name)
        XCTAssertEqual(ik.handshakeHash.count, H.hashLength, name)
        XCTAssertEqual(initiator.handshakeHash, ik.handshakeHash, name)
        if let expectedHash = v.handshakeHash {
            XCTAssertEqual(Sodium.hex(ik.handshakeHash), expectedHash, "\(name) handshake hash")
        }
    }
}
