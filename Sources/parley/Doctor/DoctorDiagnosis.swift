import ParleyControlProtocol

/// What the host looks like, gathered by `HostProbes` (or a test). nil: could not tell.
struct HostFacts: Equatable {
    /// avahi-daemon runs (`avahi-daemon --check`); nil when avahi is not installed.
    var avahiRunning: Bool?
    /// `allow-interfaces` of avahi-daemon.conf, nil when unset (every interface).
    var avahiInterfaces: String?
    /// The `hosts:` line of /etc/nsswitch.conf, nil when unreadable.
    var nsswitchHosts: String?
    /// Firewall rule listings that could be read: (tool, text). Empty: none readable.
    var firewallRules: [(tool: String, text: String)]
    /// Firewalls present but not readable (not permitted): their names.
    var firewallUnreadable: [String]
    /// Unicast addresses of the host's interfaces (no loopback).
    var interfaceAddresses: [String]
    /// What came of our own mDNS query (`MulticastQuery`); nil: not sent (mDNS off, or
    /// `--no-multicast-query`).
    var multicastQuery: MulticastQueryOutcome?

    static func == (a: HostFacts, b: HostFacts) -> Bool {
        a.avahiRunning == b.avahiRunning && a.avahiInterfaces == b.avahiInterfaces
            && a.nsswitchHosts == b.nsswitchHosts && a.firewallRules.map(\.tool) == b.firewallRules.map(\.tool)
            && a.firewallRules.map(\.text) == b.firewallRules.map(\.text)
            && a.firewallUnreadable == b.firewallUnreadable && a.interfaceAddresses == b.interfaceAddresses
            && a.multicastQuery == b.multicastQuery
    }
}

/// The outcome of `parley doctor`'s own mDNS query (`MulticastQuery`).
enum MulticastQueryOutcome: Equatable {
    /// Hosts other than this one answered: our multicast left the host and was heard.
    case answered(by: [String])
    /// No other host answered in time; `ownAnswered`: this host's own responder did (the
    /// query was well formed and avahi here is alive), on `interfaces`.
    case unanswered(ownAnswered: Bool, interfaces: [String])
    /// This host refused to send it (EPERM: a local firewall drops outgoing mDNS).
    case refusedHere(interfaces: [String])
    /// The query could not be sent (why).
    case notSent(String)
}

/// One line of `parley doctor`.
struct DoctorFinding: Codable, Equatable {
    enum Status: String, Codable { case ok, warn, fail, skip }
    /// A stable name for scripts (`--json`).
    var check: String
    var status: Status
    var detail: String
    /// What to do about it (nil when fine).
    var fix: String?
}

/// The checks of `parley doctor`, in order, from the facts: pure, so each broken setup is a
/// unit test. The order is the order of dependence: no daemon, nothing else can be asked;
/// no avahi, no advertisement; no multicast, no peers seen; ...
enum DoctorDiagnosis {
    /// How long parleyd may take after starting to register its advertisement with avahi
    /// and see it come back (avahi probes the name for about a second, then announces):
    /// before that, "not visible yet" is a start, not a fault. `parley doctor` waits up to
    /// this (since the daemon started) before judging.
    static let startupGraceSeconds = 10

    /// `uptimeSeconds`: how long parleyd has been running (nil: unknown, judged as long).
    static func evaluate(
        daemon: Result<DoctorReportResult, DaemonUnreachable>, host: HostFacts, uptimeSeconds: Int? = nil
    ) -> [DoctorFinding] {
        var out: [DoctorFinding] = []
        func add(_ check: String, _ status: DoctorFinding.Status, _ detail: String, fix: String? = nil) {
            out.append(DoctorFinding(check: check, status: status, detail: detail, fix: fix))
        }
        let report: DoctorReportResult?
        switch daemon {
        case .success(let r):
            report = r
            add("daemon", .ok, "parleyd answers; listening on \(r.listen.joined(separator: ", "))")
        case .failure(let e):
            report = nil
            add(
                "daemon", .fail, "cannot reach parleyd: \(e.message)",
                fix: "start it: systemctl --user start parleyd (or run parleyd), or pass --socket")
        }

        // avahi. parleyd reconnects to avahi by itself when it returns (it retries while
        // mDNS is "unavailable"), so the fix never includes restarting parleyd.
        let mdnsOff = report?.mdns == .off
        let resumes = "; parleyd re-advertises by itself once avahi is back (no restart of parleyd needed)"
        switch host.avahiRunning {
        case true? where report?.mdns == .unavailable:
            add(
                "avahi", .warn,
                "avahi-daemon is running on \(host.avahiInterfaces ?? "every interface"), but parleyd has not reconnected to it yet",
                fix: "wait a few seconds: parleyd retries by itself; if this persists, check journalctl -u avahi-daemon"
            )
        case true?:
            add("avahi", .ok, "avahi-daemon is running on \(host.avahiInterfaces ?? "every interface")")
        case false?:
            add(
                "avahi", mdnsOff ? .skip : .fail, "avahi-daemon is not running",
                fix: "sudo systemctl enable --now avahi-daemon" + (mdnsOff ? "" : resumes))
        case nil:
            add(
                "avahi", mdnsOff ? .skip : .fail, "avahi-daemon is not installed",
                fix: "sudo apt-get install avahi-daemon libnss-mdns")
        }

        // nss-mdns
        if let hosts = host.nsswitchHosts {
            if hosts.contains("mdns") {
                add("nss-mdns", .ok, "nsswitch resolves .local names (\(hosts.trimmingSpaces))")
            } else {
                add(
                    "nss-mdns", .fail,
                    "/etc/nsswitch.conf does not resolve .local names: discovered peers cannot be dialled",
                    fix: "sudo apt-get install libnss-mdns (or add mdns4_minimal [NOTFOUND=return] to the hosts: line)")
            }
        } else {
            add("nss-mdns", .skip, "cannot read /etc/nsswitch.conf")
        }

        guard let r = report else { return out + tail(host: host, report: nil) }

        // Our advertisement. Without avahi (stopped here, or parleyd cut off from it) it is
        // not visible whatever parleyd saw before: the avahi line above is the cause.
        let avahiDown = !mdnsOff && (host.avahiRunning != true || r.mdns == .unavailable)
        let starting = uptimeSeconds.map { $0 < Self.startupGraceSeconds } ?? false
        if mdnsOff {
            add("advertisement", .skip, "mDNS is off in parleyd (--no-mdns or mdns = false)")
        } else if avahiDown {
            add(
                "advertisement", .skip,
                "not advertised while avahi is unavailable (see the avahi line); parleyd re-advertises by itself")
        } else if r.ownAdvertisementSeen {
            add("advertisement", .ok, "our advertisement is visible to our own browser")
        } else if starting {
            add(
                "advertisement", .warn,
                "starting: parleyd started \(uptimeSeconds ?? 0) s ago and its advertisement is not visible yet",
                fix: "run parley doctor again in a few seconds")
        } else {
            add(
                "advertisement", .fail,
                "our advertisement is not visible (mDNS: \(r.mdns.rawValue)) \(uptimeSeconds.map { "\($0) s" } ?? "long") after parleyd started",
                fix: "check avahi-daemon's log (journalctl -u avahi-daemon) for a name conflict or errors; "
                    + "if avahi is fine, restart parleyd")
        }

        // Other nodes
        let multicastSeen = r.advertisementsSeen > 0
        if mdnsOff {
            add("peers seen", .skip, "mDNS is off")
        } else if avahiDown {
            add(
                "peers seen", multicastSeen ? .warn : .skip,
                multicastSeen
                    ? "\(r.advertisementsSeen) other Parley node(s) were seen before avahi became unavailable; no new ones are found until it is back (sessions already up continue)"
                    : "nothing is discovered while avahi is unavailable")
        } else if multicastSeen {
            add("peers seen", .ok, "\(r.advertisementsSeen) other Parley node(s) advertised")
        } else {
            add(
                "peers seen", .warn, "no other Parley node's advertisement seen",
                fix: "are other nodes on this subnet running? If they are elsewhere, see the multicast line")
        }

        // Multicast leaving: our own query, answered by a peer (not the unasked adverts above).
        let peersKnown = r.peersOnline + r.staticPeers + r.advertisementsSeen
        let crossFix =
            "if peers are on another subnet or multicast is filtered (guest Wi-Fi, VLANs, a firewall dropping 5353/udp): add static peers (peers = [\"host:port\"] in parleyd's config, or parley connect HOST:PORT), or enable avahi's reflector on the router (enable-reflector=yes)"
        switch (mdnsOff, host.multicastQuery) {
        case (true, _): add("multicast", .skip, "mDNS is off")
        case (false, nil): add("multicast", .skip, "our own mDNS query was not sent (--no-multicast-query)")
        case (false, .answered(let by)?):
            add("multicast", .ok, "our mDNS query was answered by a peer (\(by.prefix(4).joined(separator: ", ")))")
        case (false, .refusedHere(let interfaces)?):
            add(
                "multicast", .fail,
                "this host refused to send our mDNS query on \(interfaces.joined(separator: ", ")): a local firewall drops outgoing 5353/udp",
                fix: "allow UDP 5353 in and out (e.g. sudo ufw allow 5353/udp); " + crossFix)
        case (false, .notSent(let why)?):
            add("multicast", .warn, "could not send our mDNS query: \(why)", fix: "check the network interface is up")
        case (false, .unanswered(let ownAnswered, let interfaces)?):
            let on = interfaces.joined(separator: ", ")
            let own = ownAnswered ? " (only this host's own avahi answered)" : ""
            if peersKnown > 0 {
                add(
                    "multicast", .fail,
                    "no peer answered our mDNS query on \(on)\(own), though \(r.peersOnline) peer(s) are online, \(r.staticPeers) configured and \(r.advertisementsSeen) advertised: multicast does not leave this host or does not reach them",
                    fix: crossFix)
            } else {
                add(
                    "multicast", .warn,
                    "no peer to answer our mDNS query on \(on)\(own): no other Parley node is known",
                    fix:
                        "if a colleague runs Parley: parley connect THEIR-HOST:PORT; on a routed network see README \"When peers do not appear\""
                )
            }
        }

        // TCP reachable from a peer
        if let d = r.dialBack {
            // Whose answer it is: a verified peer, by name and fingerprint (doctor asks no one else).
            let who = d.peer.map { "\($0)" + (d.fingerprint.map { " (\($0), verified)" } ?? "") } ?? "a verified peer"
            switch d.outcome {
            case .connected: add("tcp port", .ok, "\(who) reached our port")
            case .failed:
                add(
                    "tcp port", .fail, "\(who) could not connect to our port: it is blocked (this is \(who)'s answer)",
                    fix:
                        "open TCP port \(Self.port(r) ?? "7744") in the firewall (e.g. sudo ufw allow \(Self.port(r) ?? "7744")/tcp)"
                )
            case .refused:
                add("tcp port", .skip, "\(who) refused a probe (one per minute); try again later")
            case .timeout: add("tcp port", .warn, "\(who) did not answer the probe in time")
            case .noPeer:
                add(
                    "tcp port", .skip,
                    "no peer you verified is connected to ask for a dial-back (only verified peers are asked: "
                        + "anyone else could answer anything)")
            }
        } else {
            add("tcp port", .skip, "not probed")
        }
        return out + tail(host: host, report: r)
    }

    /// Firewall, IPv6 link-local only, client isolation, and the routed-network advice.
    static func tail(host: HostFacts, report r: DoctorReportResult?) -> [DoctorFinding] {
        var out: [DoctorFinding] = []
        let port = r.flatMap(Self.port)
        // Firewall
        var drops: [String] = []
        for (tool, text) in host.firewallRules {
            for line in text.split(separator: "\n") {
                let l = line.lowercased()
                guard l.contains("drop") || l.contains("reject") || l.contains("deny") else { continue }
                if l.contains("5353") { drops.append("\(tool): \(line.trimmingSpaces) (mDNS)") }
                if let port, l.contains(port) { drops.append("\(tool): \(line.trimmingSpaces) (our port)") }
            }
        }
        if !drops.isEmpty {
            out.append(
                DoctorFinding(
                    check: "firewall", status: .fail,
                    detail: "rules drop Parley's traffic: " + drops.joined(separator: "; "),
                    fix:
                        "allow UDP 5353 (mDNS) and TCP \(port ?? "7744") in, e.g. sudo ufw allow 5353/udp; sudo ufw allow \(port ?? "7744")/tcp"
                ))
        } else if host.firewallRules.isEmpty {
            let why =
                host.firewallUnreadable.isEmpty
                ? "no firewall tool found"
                : "cannot read \(host.firewallUnreadable.joined(separator: ", ")) (run as root to check)"
            out.append(DoctorFinding(check: "firewall", status: .skip, detail: why, fix: nil))
        } else {
            out.append(
                DoctorFinding(
                    check: "firewall", status: .ok,
                    detail:
                        "no rule drops 5353/udp or our port (\(host.firewallRules.map(\.tool).joined(separator: ", ")))",
                    fix: nil))
        }
        // IPv6 link-local only
        let v4 = host.interfaceAddresses.filter { !$0.contains(":") }
        let v6global = host.interfaceAddresses.filter { $0.contains(":") && !$0.lowercased().hasPrefix("fe80") }
        if host.interfaceAddresses.isEmpty {
            out.append(
                DoctorFinding(
                    check: "addresses", status: .fail, detail: "no network address but loopback",
                    fix: "connect to a network"))
        } else if v4.isEmpty && v6global.isEmpty {
            out.append(
                DoctorFinding(
                    check: "addresses", status: .warn,
                    detail:
                        "only IPv6 link-local addresses: peers need the interface scope, and nss-mdns' mdns4 resolves IPv4 only",
                    fix: "get an IPv4 address (DHCP), or use mdns (not mdns4_minimal) in /etc/nsswitch.conf"))
        } else {
            out.append(
                DoctorFinding(
                    check: "addresses", status: .ok, detail: host.interfaceAddresses.joined(separator: ", "), fix: nil))
        }
        // Client isolation
        if let r {
            if r.advertisementsUnreachable > 0 && r.peersOnline == 0 {
                out.append(
                    DoctorFinding(
                        check: "client isolation", status: .fail,
                        detail:
                            "\(r.advertisementsUnreachable) peer(s) advertise but TCP to them fails: the network isolates clients (guest Wi-Fi, AP isolation) or their firewall blocks the port",
                        fix:
                            "use a network without client isolation, or ask the admin to allow traffic between clients; check the peers' firewalls"
                    ))
            } else {
                out.append(DoctorFinding(check: "client isolation", status: .ok, detail: "no sign of it", fix: nil))
            }
        }
        return out
    }

    static func port(_ r: DoctorReportResult) -> String? {
        r.listen.first.flatMap { $0.split(separator: ":").last.map(String.init) }
    }
}

struct DaemonUnreachable: Error, Equatable {
    var message: String
}

extension StringProtocol {
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
