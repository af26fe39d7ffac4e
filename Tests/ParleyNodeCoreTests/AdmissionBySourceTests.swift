import ParleyCore
import XCTest

@testable import ParleyNodeCore

/// Issue 15.3: what one address or one IPv6 /64 may hold, and who keeps a session when the
/// table is full.
final class SourceAddressTests: XCTestCase {
    func testIPv6AddressesCountUnderTheirSlash64() {
        XCTAssertEqual(SourceAddress("2001:db8:1:2::1").network, "2001:db8:1:2::/64")
        XCTAssertEqual(SourceAddress("2001:db8:1:2:aaaa:bbbb:cccc:dddd").network, "2001:db8:1:2::/64")
        XCTAssertEqual(SourceAddress("2001:DB8:1:2:ffff::").network, "2001:db8:1:2::/64")
        XCTAssertEqual(SourceAddress("fe80::1%eth0").network, "fe80:0:0:0::/64")
        XCTAssertEqual(SourceAddress("::1").network, "0:0:0:0::/64")
        XCTAssertEqual(SourceAddress("::ffff:10.0.0.1").network, "10.0.0.1", "an IPv4-mapped address is IPv4")
        XCTAssertEqual(SourceAddress("64:ff9b::10.0.0.1").network, "64:ff9b:0:0::/64")
    }

    func testIPv4AndUnparsableSourcesAreTheirOwnNetwork() {
        XCTAssertEqual(SourceAddress("10.0.0.1").network, "10.0.0.1")
        XCTAssertEqual(SourceAddress("1:2:3").network, "1:2:3")
        XCTAssertEqual(SourceAddress("1::2::3").network, "1::2::3")
        XCTAssertEqual(SourceAddress("12345::1").network, "12345::1")
        XCTAssertEqual(SourceAddress("?").network, "?")
    }
}

final class AdmissionPerNetworkTests: XCTestCase {
    let clock = ManualNodeClock()

    func testHandshakesFromOneSlash64AreCappedWhateverTheAddresses() {
        var a = AdmissionControl()
        for i in 0..<NodeLimits.maxUnauthenticatedPerNetwork {
            XCTAssertEqual(a.admit(source: "2001:db8:0:1::\(String(i, radix: 16))", now: clock.now), .accept)
        }
        XCTAssertEqual(a.admit(source: "2001:db8:0:1::ffff", now: clock.now), .refuseTooManyFromNetwork)
        XCTAssertEqual(a.admit(source: "2001:db8:0:2::1", now: clock.now), .accept, "another /64 is unaffected")
        a.handshakeEnded(source: "2001:db8:0:1::0")
        XCTAssertEqual(a.admit(source: "2001:db8:0:1::ffff", now: clock.now), .accept)
    }
}

final class SessionTableAdmissionTests: XCTestCase {
    let me = identity(1)
    let side = SessionTieBreak.Side(direction: .inbound, remoteBootID: [UInt8](repeating: 3, count: 16))

    private func key(_ n: Int) -> IdentityPublicKey {
        var bytes = [UInt8](repeating: 0, count: IdentityPublicKey.length)
        bytes[0] = 0xee
        bytes[1] = UInt8(n >> 8)
        bytes[2] = UInt8(n & 0xff)
        return try! IdentityPublicKey(bytes: bytes)
    }

    func testOneAddressHoldsAtMostItsCapOfStrangers() {
        var t = SessionTable<Int>(me: me, maxSessions: 100, maxPerAddress: 4, maxPerNetwork: 50)
        let attacker = SourceAddress("10.0.0.66")
        for i in 0..<4 {
            XCTAssertEqual(
                t.established(i, peer: key(i), side: side, source: attacker, standing: .stranger).first, .activate(i))
        }
        XCTAssertFalse(t.wouldAdmit(key(4), source: attacker, standing: .stranger))
        XCTAssertEqual(
            t.established(4, peer: key(4), side: side, source: attacker, standing: .stranger), [.refuseSourceFull(4)])
        XCTAssertEqual(t.sessionCount(fromAddress: "10.0.0.66"), 4)
        XCTAssertEqual(
            t.established(9, peer: key(9), side: side, source: SourceAddress("10.0.0.7"), standing: .stranger).first,
            .activate(9), "another address is unaffected")
    }

    func testASlash64HoldsAtMostItsCapWhateverTheAddresses() {
        var t = SessionTable<Int>(me: me, maxSessions: 100, maxPerAddress: 4, maxPerNetwork: 6)
        for i in 0..<6 {
            _ = t.established(
                i, peer: key(i), side: side, source: SourceAddress("2001:db8::\(i + 1)"), standing: .stranger)
        }
        XCTAssertEqual(
            t.established(6, peer: key(6), side: side, source: SourceAddress("2001:db8::99"), standing: .stranger),
            [.refuseSourceFull(6)])
    }

    func testAFullTableEvictsTheOldestStrangerForAKnownPeerAndNeverAKnownOne() {
        var t = SessionTable<Int>(me: me, maxSessions: 4, maxPerAddress: 10, maxPerNetwork: 10)
        let bob = key(100)
        let carol = key(101)
        _ = t.established(100, peer: bob, side: side, source: SourceAddress("10.0.0.2"), standing: .known)
        for i in 0..<3 {
            _ = t.established(
                i, peer: key(i), side: side, source: SourceAddress("10.0.0.\(50 + i)"), standing: .stranger)
        }
        XCTAssertEqual(t.count, 4)
        // Another stranger: refused, nobody is evicted for it.
        XCTAssertEqual(
            t.established(7, peer: key(7), side: side, source: SourceAddress("10.0.0.70"), standing: .stranger),
            [.refuseFull(7)])
        // A known peer: the oldest stranger makes room.
        XCTAssertTrue(t.wouldAdmit(carol, source: SourceAddress("10.0.0.3"), standing: .known))
        XCTAssertEqual(
            t.established(101, peer: carol, side: side, source: SourceAddress("10.0.0.3"), standing: .known),
            [.evict(0, key(0)), .peerOffline(key(0)), .activate(101), .peerOnline(carol)])
        XCTAssertNil(t.handle(for: key(0)))
        XCTAssertEqual(
            t.closed(0, peer: key(0), peerKeptAnother: false, stopping: false, now: ManualNodeClock().now), [],
            "the evicted connection's close changes nothing more")
        // A promoted stranger is known: the next eviction skips it.
        t.promote(key(1))
        let dave = key(102)
        XCTAssertEqual(
            t.established(102, peer: dave, side: side, source: SourceAddress("10.0.0.4"), standing: .known).first,
            .evict(2, key(2)))
        // Only known peers are left: even a known newcomer is refused, nobody known is evicted.
        XCTAssertEqual(
            t.established(103, peer: key(103), side: side, source: SourceAddress("10.0.0.5"), standing: .known),
            [.refuseFull(103)])
        XCTAssertNotNil(t.handle(for: bob))
        XCTAssertNotNil(t.handle(for: carol))
    }

    func testAKnownPeerFromAFullAddressEvictsAStrangerFromThatAddressOnly() {
        var t = SessionTable<Int>(me: me, maxSessions: 100, maxPerAddress: 2, maxPerNetwork: 50)
        let nat = SourceAddress("10.0.0.9")
        _ = t.established(1, peer: key(1), side: side, source: SourceAddress("10.0.0.8"), standing: .stranger)
        _ = t.established(2, peer: key(2), side: side, source: nat, standing: .stranger)
        _ = t.established(3, peer: key(3), side: side, source: nat, standing: .stranger)
        XCTAssertEqual(
            t.established(4, peer: key(4), side: side, source: nat, standing: .known).first, .evict(2, key(2)),
            "the stranger from the full address, not the older one elsewhere")
    }

    func testAReconnectingPeerReplacesItsSessionWithoutCountingTwiceAndKeepsItsPromotion() {
        var t = SessionTable<Int>(me: me, maxSessions: 2, maxPerAddress: 1, maxPerNetwork: 10)
        let src = SourceAddress("10.0.0.9")
        let restarted = SessionTieBreak.Side(direction: .inbound, remoteBootID: [UInt8](repeating: 4, count: 16))
        _ = t.established(1, peer: key(1), side: side, source: src, standing: .stranger)
        t.promote(key(1))
        XCTAssertEqual(
            t.established(2, peer: key(1), side: restarted, source: src, standing: .stranger),
            [.closeDuplicate(1), .activate(2)])
        XCTAssertEqual(t.sessionCount(fromAddress: "10.0.0.9"), 1)
        XCTAssertEqual(t.session(for: key(1))?.standing, .known)
    }
}
