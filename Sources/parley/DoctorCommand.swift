import ArgumentParser
import ParleyControlProtocol

/// `parley doctor`: why peers do not appear. One line per check, in order, each with its
/// fix; `--json` for scripts. Exit status 1 when a check failed.
struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check discovery and reachability: avahi, nss-mdns, multicast, our port, firewall.")

    @OptionGroup var options: ConnectionOptions

    @Flag(name: .customLong("no-dial-back"), help: "Do not ask a connected peer to dial our port back.")
    var noDialBack = false

    @Flag(
        name: .customLong("no-multicast-query"),
        help: "Do not send our own mDNS query (one multicast packet per interface) to see whether a peer answers.")
    var noMulticastQuery = false

    func run() throws {
        let daemon: Result<DoctorReportResult, DaemonUnreachable>
        do {
            let client = try ControlClient.connect(
                path: options.socketPath(), callTimeout: .milliseconds(ControlLimits.doctorDialBackTimeoutMs + 5_000))
            defer { client.close() }
            daemon = .success(try client.call(DoctorReportParams(dialBack: !noDialBack)))
        } catch {
            daemon = .failure(DaemonUnreachable(message: "\(error)"))
        }
        // Only judged with a daemon whose mDNS is on (its facts say who could answer); else
        // the packet is not sent at all.
        let mdnsOn = (try? daemon.get()).map { $0.mdns != .off } ?? false
        let findings = DoctorDiagnosis.evaluate(
            daemon: daemon, host: HostProbes.gather(multicastQuery: !noMulticastQuery && mdnsOn))
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
