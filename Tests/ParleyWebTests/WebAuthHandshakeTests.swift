import ParleyControlProtocol
import XCTest

@testable import ParleyWebCore

/// The sign-in handshake (docs/WEB.md "Signing in"). The page's side is auth.js (WebCrypto);
/// the vectors below were computed with Python's `hmac` module, a third implementation, so
/// a change to a label or to the message layout on one side only fails here.
final class WebAuthHandshakeTests: XCTestCase {
    let origin: Substring = "http://127.0.0.1:43210"
    let known = WebSignInKey(
        secret: WebSecret(parsing: "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")!)
    let pageNonce = String(repeating: "aa", count: 32)
    let serverNonce = WebSecret(parsing: Substring(String(repeating: "bb", count: 32)))!

    func testProofsMatchAnIndependentHMAC() {
        XCTAssertEqual(
            known.serverProof(origin: origin, pageNonce: Substring(pageNonce)),
            "1a83aa7750351ee50629a5c87550a666ec728f9855959dab304a5e0948002f36")
        XCTAssertEqual(
            known.pageProof(origin: origin, pageNonce: Substring(pageNonce), serverNonce: Substring(serverNonce.text)),
            "f1725903c6a9289fa711a1b3c6915a71cdda035a0ce97afeab220c3b38335255")
        XCTAssertEqual(known.uploadKey, "512a1af2810a5d789d9f285d40dc3e43348a8f53de9f953907895e489185ae0f")
    }

    func testProofsDependOnOriginNonceAndSecret() {
        let proof = known.serverProof(origin: origin, pageNonce: Substring(pageNonce))
        XCTAssertNotEqual(proof, known.serverProof(origin: "http://127.0.0.1:43211", pageNonce: Substring(pageNonce)))
        XCTAssertNotEqual(proof, known.serverProof(origin: origin, pageNonce: Substring(serverNonce.text)))
        XCTAssertNotEqual(proof, WebSignInKey.random().serverProof(origin: origin, pageNonce: Substring(pageNonce)))
        XCTAssertFalse(proof.contains(known.secret.text))
        XCTAssertNotEqual(known.uploadKey, known.secret.text, "the upload header never carries the secret")
    }

    func hello(_ nonce: String) -> [UInt8] { Array(#"{"auth":"hello","nonce":"\#(nonce)"}"#.utf8) }
    func proof(_ proof: String) -> [UInt8] { Array(#"{"auth":"proof","proof":"\#(proof)"}"#.utf8) }

    func testTheServerProvesFirstThenThePageSignsIn() throws {
        var machine = WebAuthHandshake(key: known, origin: origin)
        guard case .send(let answer) = machine.receive(hello(pageNonce), serverNonce: serverNonce) else {
            return XCTFail()
        }
        let members = try XCTUnwrap(try JSONValue(parsing: Array(answer.utf8)).objectValue)
        XCTAssertEqual(members["auth"], .string("proof"))
        XCTAssertEqual(members["proof"], .string("1a83aa7750351ee50629a5c87550a666ec728f9855959dab304a5e0948002f36"))
        XCTAssertEqual(members["nonce"], .string(serverNonce.text))
        XCTAssertFalse(answer.contains(known.secret.text))
        XCTAssertEqual(
            machine.receive(
                proof("f1725903c6a9289fa711a1b3c6915a71cdda035a0ce97afeab220c3b38335255"), serverNonce: .random()),
            .authenticated(#"{"auth":"ok"}"#))
    }

    func testAWrongProofIsRefused() {
        for wrong in [
            WebSignInKey.random().pageProof(
                origin: origin, pageNonce: Substring(pageNonce), serverNonce: Substring(serverNonce.text)),
            // The right key, but for another server nonce (a replayed proof) or origin.
            known.pageProof(origin: origin, pageNonce: Substring(pageNonce), serverNonce: Substring(pageNonce)),
            known.pageProof(
                origin: "http://localhost:43210", pageNonce: Substring(pageNonce),
                serverNonce: Substring(serverNonce.text)),
            // The server's own proof sent back, the secret itself, nothing.
            known.serverProof(origin: origin, pageNonce: Substring(pageNonce)), known.secret.text, ""
        ] {
            var machine = WebAuthHandshake(key: known, origin: origin)
            _ = machine.receive(hello(pageNonce), serverNonce: serverNonce)
            XCTAssertEqual(
                machine.receive(proof(wrong), serverNonce: .random()), .refuse(WebAuthHandshake.refusedReason))
        }
    }

    func testAnythingButTheHandshakeEndsIt() {
        let request = Array(#"{"jsonrpc":"2.0","id":1,"method":"node.whoami"}"#.utf8)
        for first in [
            request, proof(String(repeating: "0", count: 64)), hello("short"), hello(pageNonce.uppercased()),
            Array("not json".utf8), [], Array(#"{"auth":"hello","nonce":1}"#.utf8),
            Array(repeating: 0x20, count: WebLimits.maxAuthMessageBytes + 1) + hello(pageNonce)
        ] {
            var machine = WebAuthHandshake(key: known, origin: origin)
            guard case .refuse = machine.receive(first, serverNonce: serverNonce) else {
                return XCTFail(String(decoding: first.prefix(80), as: UTF8.self))
            }
            // Once refused, nothing more is taken.
            guard case .refuse = machine.receive(hello(pageNonce), serverNonce: serverNonce) else { return XCTFail() }
        }
        // A request where the proof belongs: refused, never relayed.
        var machine = WebAuthHandshake(key: known, origin: origin)
        _ = machine.receive(hello(pageNonce), serverNonce: serverNonce)
        guard case .refuse = machine.receive(request, serverNonce: serverNonce) else { return XCTFail() }
        // A second hello does not get a second proof.
        machine = WebAuthHandshake(key: known, origin: origin)
        _ = machine.receive(hello(pageNonce), serverNonce: serverNonce)
        guard case .refuse = machine.receive(hello(pageNonce), serverNonce: serverNonce) else { return XCTFail() }
    }

    func testAProbeGetsTheServersProofAndNothingElse() throws {
        var machine = WebAuthHandshake(key: known, origin: "null", probeOnly: true)
        guard case .proveAndEnd(let answer) = machine.receive(hello(pageNonce), serverNonce: serverNonce) else {
            return XCTFail()
        }
        let members = try XCTUnwrap(try JSONValue(parsing: Array(answer.utf8)).objectValue)
        XCTAssertEqual(
            members["proof"], .string(known.serverProof(origin: "null", pageNonce: Substring(pageNonce))))
        XCTAssertNil(members["nonce"], "no server nonce: there is nothing to answer")
        let right = known.pageProof(origin: "null", pageNonce: Substring(pageNonce), serverNonce: "")
        guard case .refuse = machine.receive(proof(right), serverNonce: serverNonce) else {
            return XCTFail("a probe never signs in")
        }
    }

    func testTheGuardSendsOnlyTheSignInFilesSocketsToAProbe() {
        func decide(_ origin: Substring?, _ path: Substring = "/ws", upgrade: Bool = true) -> WebRequestDecision {
            WebRequestGuard.decide(
                WebRequestFacts(
                    method: "GET", path: path, host: "127.0.0.1:43210", origin: origin, isWebSocketUpgrade: upgrade),
                port: 43210, isUploadKey: known.isUploadKey)
        }
        XCTAssertEqual(decide("null"), .probe)
        XCTAssertEqual(decide("http://127.0.0.1:43210"), .upgrade(.page))
        XCTAssertEqual(decide("null", "/"), .refuse(.crossSite), "a null origin gets nothing else")
        XCTAssertEqual(decide("null", upgrade: false), .refuse(.crossSite))
        XCTAssertEqual(
            WebRequestGuard.decide(
                WebRequestFacts(
                    method: "GET", path: "/ws", host: "evil.example:43210", origin: "null", isWebSocketUpgrade: true),
                port: 43210, isUploadKey: known.isUploadKey), .refuse(.wrongHost))
    }

    func testUploadKeyComparison() {
        XCTAssertTrue(known.isUploadKey(Substring(known.uploadKey)))
        XCTAssertFalse(known.isUploadKey(Substring(known.uploadKey.uppercased())))
        XCTAssertFalse(known.isUploadKey(""))
        XCTAssertFalse(known.isUploadKey(Substring(known.uploadKey.dropLast())))
    }
}
