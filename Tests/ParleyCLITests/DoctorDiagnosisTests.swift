import ParleyControlProtocol
import XCTest

@testable import parley

final class DoctorDiagnosisTests: XCTestCase {
    let healthyHost = HostFacts(
        avahiRunning: true, avahiInterfaces: nil, nsswitchHosts: "hosts: files mdns4_minimal [NOTFOUND=return] dns",
        firewallRules: [(tool: "nft", text: "table inet filter {\n chain input {\n tcp dport 22 accept\n }\n}")],
        firewallUnreadable: [], interfaceAddresses: ["10.0.0.5"], multicastQuery: .answered(by: ["10.0.0.6"]))

    func report(
        seen: Int = 2, unreachable: Int = 0, online: Int = 1, staticPeers: Int = 0, own: Bool = true,
        mdns: MDNSState = .on, dialBack: DoctorDialBack? = DoctorDialBack(peer: "alice", outcome: .connected)
    ) -> DoctorReportResult {
        DoctorReportResult(
            listen: ["0.0.0.0:7744"], mdns: mdns, ownAdvertisementSeen: own, advertisementsSeen: seen,
            advertisementsUnreachable: unreachable, peersOnline: online, staticPeers: staticPeers, dialBack: dialBack)
    }

    func failing(_ f: [DoctorFinding]) -> [String] { f.filter { $0.status == .fail }.map(\.check) }

    func testAHealthyNodePassesEveryCheckInOrder() {
        let f = DoctorDiagnosis.evaluate(daemon: .success(report()), host: healthyHost)
        XCTAssertEqual(
            f.map(\.check),
            [
                "daemon", "avahi", "nss-mdns", "advertisement", "peers seen", "multicast", "tcp port", "firewall",
                "addresses", "client isolation"
            ])
        XCTAssertEqual(failing(f), [])
        XCTAssertTrue(f.allSatisfy { $0.status == .ok })
    }

    func testNoDaemonIsTheFirstFailureAndHostChecksStillRun() {
        let f = DoctorDiagnosis.evaluate(daemon: .failure(DaemonUnreachable(message: "no socket")), host: healthyHost)
        XCTAssertEqual(f.first?.check, "daemon")
        XCTAssertEqual(f.first?.status, .fail)
        XCTAssertNotNil(f.first?.fix)
        XCTAssertTrue(f.contains { $0.check == "avahi" && $0.status == .ok })
    }

    func testAvahiStoppedNamesAvahiWithItsFix() {
        var host = healthyHost
        host.avahiRunning = false
        let f = DoctorDiagnosis.evaluate(daemon: .success(report(seen: 0, own: false, mdns: .unavailable)), host: host)
        XCTAssertEqual(failing(f).first, "avahi")
        XCTAssertTrue(f.first { $0.check == "avahi" }!.fix!.contains("avahi-daemon"))
    }

    func testMissingNssMdnsIsNamed() {
        var host = healthyHost
        host.nsswitchHosts = "hosts: files dns"
        XCTAssertEqual(failing(DoctorDiagnosis.evaluate(daemon: .success(report()), host: host)), ["nss-mdns"])
    }

    func testMulticastThatDoesNotCrossSuggestsStaticPeersOrTheReflector() {
        var host = healthyHost
        host.multicastQuery = .unanswered(ownAnswered: true, interfaces: ["eth0"])
        let f = DoctorDiagnosis.evaluate(daemon: .success(report(seen: 0, online: 1)), host: host)
        XCTAssertEqual(failing(f), ["multicast"])
        let line = f.first { $0.check == "multicast" }!
        XCTAssertTrue(line.fix!.contains("static peers") && line.fix!.contains("enable-reflector"), line.fix!)
        XCTAssertTrue(line.detail.contains("eth0") && line.detail.contains("own avahi"), line.detail)
        // Nobody to compare with: "no peer to answer", a warning, not a verdict.
        let alone = DoctorDiagnosis.evaluate(daemon: .success(report(seen: 0, online: 0)), host: host)
        let m = alone.first { $0.check == "multicast" }!
        XCTAssertEqual(m.status, .warn)
        XCTAssertTrue(m.detail.contains("no peer to answer"), m.detail)
    }

    func testMulticastIsJudgedByOurOwnQueryNotByUnaskedAdverts() {
        // Adverts seen (peers send them unasked) but nobody answered our query: our
        // multicast does not leave (e.g. outgoing 5353 dropped here).
        var host = healthyHost
        host.multicastQuery = .unanswered(ownAnswered: false, interfaces: ["wlan0"])
        let f = DoctorDiagnosis.evaluate(daemon: .success(report(seen: 2, online: 0)), host: host)
        XCTAssertEqual(failing(f), ["multicast"])
        // Answered although no advert was seen yet: fine.
        host.multicastQuery = .answered(by: ["10.0.0.9"])
        let g = DoctorDiagnosis.evaluate(daemon: .success(report(seen: 0, online: 0)), host: host)
        let m = g.first { $0.check == "multicast" }!
        XCTAssertEqual(m.status, .ok)
        XCTAssertTrue(m.detail.contains("10.0.0.9"))
        // Refused by this host's own firewall: a failure even with nobody to compare with.
        host.multicastQuery = .refusedHere(interfaces: ["eth0"])
        let r = DoctorDiagnosis.evaluate(daemon: .success(report(seen: 0, online: 0)), host: host)
        XCTAssertEqual(failing(r), ["multicast"])
        XCTAssertTrue(r.first { $0.check == "multicast" }!.fix!.contains("5353/udp"))
        // Not sent: a warning with the reason; not asked (flag or mDNS off): skipped.
        host.multicastQuery = .notSent("no up interface")
        XCTAssertEqual(
            DoctorDiagnosis.evaluate(daemon: .success(report()), host: host).first { $0.check == "multicast" }?.status,
            .warn)
        host.multicastQuery = nil
        XCTAssertEqual(
            DoctorDiagnosis.evaluate(daemon: .success(report()), host: host).first { $0.check == "multicast" }?.status,
            .skip)
    }

    func testABlockedPortFailsTheDialBackAndAFirewallRuleIsNamed() {
        let blocked = report(dialBack: DoctorDialBack(peer: "alice", outcome: .failed))
        XCTAssertEqual(failing(DoctorDiagnosis.evaluate(daemon: .success(blocked), host: healthyHost)), ["tcp port"])
        var host = healthyHost
        host.firewallRules = [(tool: "nft", text: "chain input {\n udp dport 5353 drop\n tcp dport 7744 drop\n}")]
        let f = DoctorDiagnosis.evaluate(daemon: .success(blocked), host: host)
        XCTAssertEqual(failing(f), ["tcp port", "firewall"])
        let detail = f.first { $0.check == "firewall" }!.detail
        XCTAssertTrue(detail.contains("(mDNS)") && detail.contains("(our port)"), detail)
    }

    /// Issue 29 (L1): the answer is a verified peer's, and doctor says whose.
    func testTheDialBackSaysWhoseAnswerItIsAndThatOnlyVerifiedPeersAreAsked() {
        let blocked = report(dialBack: DoctorDialBack(peer: "alice", fingerprint: "u2y2-nmfw-abcd", outcome: .failed))
        let tcp = DoctorDiagnosis.evaluate(daemon: .success(blocked), host: healthyHost).first {
            $0.check == "tcp port"
        }!
        XCTAssertTrue(tcp.detail.contains("alice (u2y2-nmfw-abcd, verified)"), tcp.detail)
        XCTAssertTrue(tcp.detail.contains("answer"), tcp.detail)
        let none = report(dialBack: DoctorDialBack(peer: nil, outcome: .noPeer))
        let skipped = DoctorDiagnosis.evaluate(daemon: .success(none), host: healthyHost).first {
            $0.check == "tcp port"
        }!
        XCTAssertEqual(skipped.status, .skip)
        XCTAssertTrue(skipped.detail.contains("verified"), skipped.detail)
        XCTAssertNil(skipped.fix, "no advice without a trusted answer")
    }

    func testUnreadableFirewallIsSkippedNotFailed() {
        var host = healthyHost
        host.firewallRules = []
        host.firewallUnreadable = ["nft", "iptables"]
        let fw = DoctorDiagnosis.evaluate(daemon: .success(report()), host: host).first { $0.check == "firewall" }!
        XCTAssertEqual(fw.status, .skip)
        XCTAssertTrue(fw.detail.contains("nft, iptables"))
    }

    func testIPv6LinkLocalOnlyAndClientIsolation() {
        var host = healthyHost
        host.interfaceAddresses = ["fe80::1"]
        let f = DoctorDiagnosis.evaluate(daemon: .success(report(seen: 3, unreachable: 3, online: 0)), host: host)
        XCTAssertEqual(f.first { $0.check == "addresses" }?.status, .warn)
        XCTAssertEqual(failing(f), ["client isolation"])
    }
}
