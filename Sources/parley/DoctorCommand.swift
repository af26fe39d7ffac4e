import ArgumentParser
import Foundation
import ParleyControlProtocol

/// `parley doctor`: why peers do not appear. One line per check, in order, each with its
/// fix; `--json` for scripts. Exit status 1 when a check failed.
struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check discovery and reachability: avahi, nss-mdns, multicast, our port, firewall.",
        discussion: """
            With PEER: check that one peer end to end instead (known? advertised? an address? reachable over \
            TCP from here? a session? last seen?) and say why not. Just after parleyd started, doctor waits \
            (at most 10 s since the start) for its advertisement before judging it.
            """)

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "Check only this peer (display name or fingerprint prefix).", completion: PeerCompletion.peers)
    var peer: String?

    @Flag(name: .customLong("no-dial-back"), help: "Do not ask a connected peer to dial our port back.")
    var noDialBack = false

    @Flag(
        name: .customLong("no-multicast-query"),
        help: "Do not send our own mDNS query (one multicast packet per interface) to see whether a peer answers.")
    var noMulticastQuery = false

    /// Between two looks at a starting daemon's advertisement.
    static let startupPollMilliseconds = 500

    func run() throws {
        if let peer { return try runPeer(peer) }
        let daemon: Result<DoctorReportResult, DaemonUnreachable>
        var uptime: Int?
        do {
            let client = try ControlClient.connect(
                path: options.socketPath(), callTimeout: .milliseconds(ControlLimits.doctorDialBackTimeoutMs + 5_000))
            defer { client.close() }
            uptime = try? client.call(NodeStatusParams()).uptimeSeconds
            var report = try client.call(DoctorReportParams(dialBack: !noDialBack))
            // A daemon that just started is still registering with avahi: wait (bounded
            // by the grace since its start) instead of calling a start a failure.
            let clock = ContinuousClock()
            let waitStart = clock.now
            while let started = uptime, report.mdns != .off, !report.ownAdvertisementSeen,
                started + Int((clock.now - waitStart).components.seconds) < DoctorDiagnosis.startupGraceSeconds
            {
                usleep(useconds_t(Self.startupPollMilliseconds) * 1_000)
                var fresh = try client.call(DoctorReportParams(dialBack: false))
                fresh.dialBack = report.dialBack
                report = fresh
            }
            uptime = uptime.map { $0 + Int((clock.now - waitStart).components.seconds) }
            daemon = .success(report)
        } catch {
            daemon = .failure(DaemonUnreachable(message: "\(error)"))
        }
        // Only judged with a daemon whose mDNS is on (its facts say who could answer); else
        // the packet is not sent at all.
        let mdnsOn = (try? daemon.get()).map { $0.mdns != .off } ?? false
        let findings = DoctorDiagnosis.evaluate(
            daemon: daemon, host: HostProbes.gather(multicastQuery: !noMulticastQuery && mdnsOn), uptimeSeconds: uptime)
        try report(findings)
    }

    /// `parley doctor PEER`: the daemon's view of the peer, then a TCP probe of each known
    /// address from this host while no session is up.
    func runPeer(_ query: String) throws {
        let lookup: DoctorPeerDiagnosis.Lookup
        do {
            let client = try ControlClient.connect(path: options.socketPath())
            defer { client.close() }
            lookup = .found(try client.call(DoctorPeerParams(peer: query)))
        } catch .remote(let e) where e.knownCode == .peerNotFound {
            lookup = .notFound(e.message)
        } catch .remote(let e) where e.knownCode == .peerAmbiguous {
            lookup = .ambiguous(e.message)
        } catch .remote(let e) where e.knownCode == .methodNotFound {
            Console.err("parley: this parleyd does not know doctor.peer; are parley and parleyd the same version?")
            throw ExitCode(CLIExitCode.daemonError)
        } catch {
            lookup = .daemonUnreachable("\(error)")
        }
        var probes: [(address: String, outcome: DoctorTCPOutcome)] = []
        if case .found(let r) = lookup, !r.peer.online {
            for address in DoctorPeerDiagnosis.knownAddresses(r).prefix(TCPProbe.maxAddresses) {
                probes.append((address, TCPProbe.probe(address)))
            }
        }
        let now = Int(Date().timeIntervalSince1970 * 1000)
        try report(DoctorPeerDiagnosis.evaluate(query: query, lookup: lookup, probes: probes, nowMs: now))
    }

    private func report(_ findings: [DoctorFinding]) throws {
        if options.json {
            Console.json(findings)
        } else {
            for f in findings {
                let mark = ["ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skip": "--  "][f.status.rawValue]!
                var line = "\(mark) \(f.check): \(Terminal.line(f.detail))"
                if let fix = f.fix { line += "\n       fix: \(Terminal.line(fix))" }
                Console.out(line)
            }
        }
        if findings.contains(where: { $0.status == .fail }) { throw ExitCode(1) }
    }
}
