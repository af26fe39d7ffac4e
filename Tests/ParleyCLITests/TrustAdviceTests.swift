import Foundation
import ParleyControlProtocol
import XCTest

@testable import parley

/// Issue 29: advice and labels that are safe to follow.
final class TrustAdviceTests: XCTestCase {
    let fp = "u2y2-nmfw-k3ab-9xqz-7c4d-pp2m-aa7h-q1rt-x9x9-zz1k-ab12-cd34-ef56"

    func peer(trust: PeerTrust, name: String = "bob") -> PeerInfo {
        PeerInfo(
            name: name, host: "h", fingerprint: fp, identityKey: String(repeating: "ab", count: 32), online: true,
            addresses: [], trust: trust, safetyNumber: "12345 67890", lastSeen: nil, queued: 0)
    }

    /// `parley trust show` never prints a verify command carrying the key's own fingerprint
    /// (copy and paste would "verify" whatever key this node was given): a placeholder, and
    /// the instruction to read the other device's screen.
    func testTrustShowGivesTheVerifyCommandWithAPlaceholder() {
        let lines = HumanFormat.trustShow(
            TrustShowResult(peer: peer(trust: .pinned), yourFingerprint: "mine", qrText: "qr", previousKeys: []))
        let verify = lines.filter { $0.contains("parley trust verify") }
        XCTAssertEqual(verify.count, 1, lines.joined(separator: "\n"))
        XCTAssertFalse(verify[0].contains(fp), verify[0])
        XCTAssertTrue(verify[0].contains("--fingerprint <"), verify[0])
        let text = lines.joined(separator: "\n")
        XCTAssertTrue(text.contains("other device") && text.contains("screen"), text)
    }

    /// Wherever two names could be confused, an unverified key's name carries a short
    /// fingerprint ("bob " and "bob" look the same).
    func testUnverifiedNamesCarryAShortFingerprint() {
        XCTAssertEqual(HumanFormat.label(peer(trust: .pinned, name: "bob ")), "bob  (u2y2-nmfw)")
        XCTAssertEqual(HumanFormat.label(peer(trust: .verified)), "bob")
        XCTAssertEqual(HumanFormat.shortFingerprint(fp), "u2y2-nmfw")
    }

    /// `parley trust forget` says in plain words which earlier key it blocked, and never
    /// advises unblocking it (a key a person retired: a lost or stolen device's).
    func testTrustForgetNamesTheKeyItBlocked() throws {
        XCTAssertEqual(TrustForgetCommand.blockedLines([]), [])
        let lines = TrustForgetCommand.blockedLines([peer(trust: .blocked, name: "bob")])
        XCTAssertEqual(lines.count, 1)
        XCTAssertTrue(lines[0].hasPrefix("also blocked bob (\(fp))"), lines[0])
        XCTAssertTrue(lines[0].contains("stays refused"), lines[0])
        XCTAssertFalse(lines[0].contains("unblock"), lines[0])
        // The result's `blocked` is read back from a daemon's answer, and absent from an older one.
        let decoded = try JSONDecoder().decode(
            TrustForgetResult.self, from: Data(#"{"fingerprint":"x"}"#.utf8))
        XCTAssertEqual(decoded.blocked, [])
        let round = try JSONDecoder().decode(
            TrustForgetResult.self,
            from: try JSONEncoder().encode(TrustForgetResult(fingerprint: "x", blocked: [peer(trust: .blocked)])))
        XCTAssertEqual(round.blocked.map(\.fingerprint), [fp])
    }
}
