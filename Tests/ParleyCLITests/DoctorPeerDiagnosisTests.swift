import ParleyControlProtocol
import XCTest

@testable import parley

/// `parley doctor PEER` and the consistency fixes of `parley doctor` (issue 31).
final class DoctorPeerDiagnosisTests: XCTestCase {
    let now = 10_000_000

    func result(
        online: Bool = false, advertised: Bool = true, lastSeen: Int? = 9_960_000, failures: Int = 3,
        addresses: [String] = ["10.0.0.2:7744"], trust: PeerTrust = .pinned, mdns: MDNSState = .on
    ) -> DoctorPeerResult {
        DoctorPeerResult(
            peer: PeerInfo(
                name: "bob", host: "h", fingerprint: "pkhh-45sk-aaaa-bbbb", identityKey: "00", online: online,
                addresses: addresses + ["mdns:parley-1234"], trust: trust, safetyNumber: "1", lastSeen: lastSeen,
                queued: 0),
            mdns: mdns, advertised: advertised,
            dialing: addresses.isEmpty
                ? []
                : [
                    DoctorDialTarget(
                        source: "remembered", addresses: addresses, failures: failures, connecting: false,
                        spoofed: false)
                ])
    }

    func status(_ f: [DoctorFinding], _ check: String) -> DoctorFinding.Status? {
        f.first { $0.check == check }?.status
    }

    func testAHealthyPeerIsOkThroughout() {
        let f = DoctorPeerDiagnosis.evaluate(
            query: "bob", lookup: .found(result(online: true, failures: 0)), probes: [], nowMs: now)
        XCTAssertEqual(f.map(\.check), ["peer", "advertised", "address", "reachable", "session", "last seen"])
        XCTAssertTrue(f.allSatisfy { $0.status == .ok }, "\(f)")
    }

    /// The cut link of the issue: `parley doctor` said all ok; `doctor bob` says where.
    func testACutLinkIsNamedWithItsFix() {
        let f = DoctorPeerDiagnosis.evaluate(
            query: "bob", lookup: .found(result(advertised: false)),
            probes: [(address: "10.0.0.2:7744", outcome: .timedOut)], nowMs: now)
        XCTAssertEqual(status(f, "advertised"), .warn)
        XCTAssertEqual(status(f, "address"), .ok)
        XCTAssertFalse(f.first { $0.check == "address" }!.detail.contains("mdns:"), "only addresses one can dial")
        let reachable = f.first { $0.check == "reachable" }!
        XCTAssertEqual(reachable.status, .fail)
        XCTAssertTrue(reachable.detail.contains("10.0.0.2:7744 did not answer"), reachable.detail)
        XCTAssertTrue(reachable.fix!.contains("cut"), reachable.fix!)
        XCTAssertEqual(status(f, "session"), .fail)
        XCTAssertTrue(f.first { $0.check == "session" }!.detail.contains("3 dial attempts failed"))
        XCTAssertEqual(f.first { $0.check == "last seen" }!.detail, "last session 40 s ago")
    }

    func testNothingListeningIsToldApartFromACutLink() {
        let f = DoctorPeerDiagnosis.evaluate(
            query: "bob", lookup: .found(result()), probes: [(address: "10.0.0.2:7744", outcome: .refused)], nowMs: now)
        XCTAssertTrue(f.first { $0.check == "reachable" }!.fix!.contains("parleyd does not listen"))
    }

    func testReachableButNoSessionPointsAtKeysNotTheNetwork() {
        let f = DoctorPeerDiagnosis.evaluate(
            query: "bob", lookup: .found(result()), probes: [(address: "10.0.0.2:7744", outcome: .accepted)], nowMs: now
        )
        XCTAssertEqual(status(f, "reachable"), .ok)
        XCTAssertTrue(f.first { $0.check == "session" }!.fix!.contains("network key"))
    }

    func testUnknownPeerNoAddressAndOwnDecisions() {
        let unknown = DoctorPeerDiagnosis.evaluate(query: "zed", lookup: .notFound("no peer"), probes: [], nowMs: now)
        XCTAssertEqual(unknown.map(\.status), [.fail])
        XCTAssertTrue(unknown[0].fix!.contains("parley connect HOST:PORT"))
        let noAddress = DoctorPeerDiagnosis.evaluate(
            query: "bob", lookup: .found(result(advertised: false, lastSeen: nil, addresses: [])), probes: [],
            nowMs: now)
        XCTAssertEqual(status(noAddress, "address"), .fail)
        XCTAssertEqual(status(noAddress, "last seen"), .warn)
        let blocked = DoctorPeerDiagnosis.evaluate(
            query: "bob", lookup: .found(result(trust: .blocked)), probes: [], nowMs: now)
        XCTAssertEqual(status(blocked, "peer"), .fail)
        XCTAssertTrue(blocked[0].fix!.hasPrefix("parley trust unblock pkhh-45sk"))
    }

    // MARK: parley doctor: start-up grace and avahi stopped

    let healthyHost = HostFacts(
        avahiRunning: true, avahiInterfaces: nil, nsswitchHosts: "hosts: files mdns4_minimal [NOTFOUND=return] dns",
        firewallRules: [], firewallUnreadable: [], interfaceAddresses: ["10.0.0.5"], multicastQuery: nil)

    func report(own: Bool, seen: Int = 2, mdns: MDNSState = .on) -> DoctorReportResult {
        DoctorReportResult(
            listen: ["0.0.0.0:7744"], mdns: mdns, ownAdvertisementSeen: own, advertisementsSeen: seen,
            advertisementsUnreachable: 0, peersOnline: 1, staticPeers: 0, dialBack: nil)
    }

    func testJustStartedIsStartingNotAFailure() {
        let f = DoctorDiagnosis.evaluate(daemon: .success(report(own: false)), host: healthyHost, uptimeSeconds: 1)
        let ad = f.first { $0.check == "advertisement" }!
        XCTAssertEqual(ad.status, .warn)
        XCTAssertTrue(ad.detail.hasPrefix("starting"), ad.detail)
        XCTAssertFalse(ad.fix!.contains("restart"))
        let late = DoctorDiagnosis.evaluate(daemon: .success(report(own: false)), host: healthyHost, uptimeSeconds: 60)
        XCTAssertEqual(late.first { $0.check == "advertisement" }!.status, .fail, "after the grace it is a fault")
    }

    /// avahi stopped: one cause (avahi), its dependents not "ok", and no "restart parleyd".
    func testAvahiStoppedIsConsistentAndDoesNotAdviseRestartingParleyd() {
        var host = healthyHost
        host.avahiRunning = false
        let f = DoctorDiagnosis.evaluate(
            daemon: .success(report(own: true, seen: 2, mdns: .unavailable)), host: host, uptimeSeconds: 600)
        XCTAssertEqual(status(f, "avahi"), .fail)
        XCTAssertNotEqual(status(f, "advertisement"), .ok, "a stale 'seen' is not shown as ok")
        XCTAssertNotEqual(status(f, "peers seen"), .ok)
        for finding in f { XCTAssertFalse(finding.fix?.contains("restart parleyd") ?? false, "\(finding)") }
        XCTAssertTrue(f.first { $0.check == "avahi" }!.fix!.contains("re-advertises by itself"))
        // parleyd still reconnecting although avahi is back: a warning, not a restart.
        let back = DoctorDiagnosis.evaluate(
            daemon: .success(report(own: true, mdns: .unavailable)), host: healthyHost, uptimeSeconds: 600)
        XCTAssertEqual(status(back, "avahi"), .warn)
        XCTAssertEqual(status(back, "advertisement"), .skip)
    }
}
