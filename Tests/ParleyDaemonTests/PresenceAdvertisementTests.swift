import ParleyCore
import ParleyDiscovery
import XCTest

@testable import ParleyDaemon

/// What parleyd advertises over mDNS (docs/PROTOCOL.md "Discovery", "Private presence";
/// issue 33 item 10): the instance name's form and case, the TXT keys, and a token computed
/// over the nonce's 8 bytes (not its 16 hex characters).
final class PresenceAdvertisementTests: XCTestCase {
    static let unixSeconds: UInt64 = 1_767_225_600

    func isLowerHex(_ text: String, length: Int) -> Bool {
        text.utf8.count == length && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    func testTheAdvertisementCarriesOnlyVersionNonceAndATokenOverTheNoncesBytes() throws {
        let me = try TestIdentity(name: "alice")
        for networkKey in [nil, Array(UInt8(0x80)...0x9f)] {
            let ad = DiscoveryService.advertisement(
                for: me.card, port: 7744, networkKey: networkKey, unixSeconds: Self.unixSeconds)
            XCTAssertTrue(ad.instanceName.hasPrefix("parley-"), ad.instanceName)
            XCTAssertTrue(isLowerHex(String(ad.instanceName.dropFirst(7)), length: 10), ad.instanceName)
            XCTAssertEqual(Set(ad.txt.keys), ["v", "n", "t"])
            XCTAssertEqual(ad.txt["v"], "1")
            let n = try XCTUnwrap(ad.txt["n"])
            let t = try XCTUnwrap(ad.txt["t"])
            XCTAssertTrue(isLowerHex(n, length: 16), n)
            XCTAssertTrue(isLowerHex(t, length: 24), t)
            let nonce = try XCTUnwrap(Sodium.fromHex(n))
            let epoch = PresenceToken.epoch(atUnixSeconds: Self.unixSeconds)
            XCTAssertEqual(
                t,
                Sodium.hex(
                    PresenceToken.make(
                        identity: me.card.identityKey, networkKey: networkKey, epoch: epoch, nonce: nonce)))
            XCTAssertNotEqual(
                t,
                Sodium.hex(
                    PresenceToken.make(
                        identity: me.card.identityKey, networkKey: networkKey, epoch: epoch,
                        nonce: Array(n.utf8))),
                "the HMAC is over the nonce's bytes, not its hex text")
            XCTAssertFalse(ad.txt.values.contains { $0.contains("alice") }, "no name in the TXT record")
        }
    }

    func testEveryAdvertisementHasANewInstanceNameAndNonce() throws {
        let me = try TestIdentity(name: "alice")
        let ads = (0..<8).map { _ in
            DiscoveryService.advertisement(for: me.card, port: 7744, networkKey: nil, unixSeconds: Self.unixSeconds)
        }
        XCTAssertEqual(Set(ads.map(\.instanceName)).count, ads.count)
        XCTAssertEqual(Set(ads.compactMap { $0.txt["n"] }).count, ads.count)
    }
}
