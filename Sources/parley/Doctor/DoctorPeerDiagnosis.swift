import ParleyControlProtocol

/// `parley doctor PEER`: one peer end to end, in the order things depend on each other:
/// known at all? advertised? an address known? reachable over TCP from here? a session?
/// last seen? Each line says why not and what to do. Pure: the daemon's answer, the TCP
/// probes and the clock go in.
enum DoctorPeerDiagnosis {
    /// Why `doctor.peer` gave no peer.
    enum Lookup: Equatable {
        case found(DoctorPeerResult)
        /// The daemon knows no peer by that selector (never advertised here, never connected).
        case notFound(String)
        /// Several peers match (the daemon's message lists them).
        case ambiguous(String)
        case daemonUnreachable(String)
    }

    static func evaluate(
        query: String, lookup: Lookup, probes: [(address: String, outcome: DoctorTCPOutcome)], nowMs: Int
    ) -> [DoctorFinding] {
        var out: [DoctorFinding] = []
        func add(_ check: String, _ status: DoctorFinding.Status, _ detail: String, fix: String? = nil) {
            out.append(DoctorFinding(check: check, status: status, detail: detail, fix: fix))
        }
        let shown = Terminal.line(query)
        let r: DoctorPeerResult
        switch lookup {
        case .daemonUnreachable(let why):
            add(
                "daemon", .fail, "cannot reach parleyd: \(why)",
                fix: "start it: systemctl --user start parleyd (or run parleyd), or pass --socket")
            return out
        case .ambiguous(let message):
            add(
                "peer", .fail, Terminal.line(message),
                fix: "name the peer by fingerprint prefix (see `parley peers`)")
            return out
        case .notFound:
            add(
                "peer", .fail,
                "no peer matches '\(shown)': parleyd has neither seen it advertised nor had a session with it",
                fix:
                    "check the name with `parley peers`; if the peer runs Parley on another subnet or mDNS does not reach it, "
                    + "ask for its address (`parley status` there) and run parley connect HOST:PORT; then see `parley doctor`"
            )
            return out
        case .found(let found):
            r = found
        }
        let p = r.peer
        let name = Terminal.line(p.label)
        let who = "\(name) (\(Terminal.line(p.fingerprint)))"

        // Known, and not refused by our own trust decision.
        switch p.trust {
        case .blocked:
            add(
                "peer", .fail, "\(who): you blocked this key, so no session is made",
                fix: "parley trust unblock \(ShellQuoting.word(Terminal.line(String(p.fingerprint.prefix(9)))))")
        case .pending:
            add(
                "peer", .fail, "\(who): a new key waiting for your approval, so no session is made",
                fix:
                    "compare `parley trust show \(Terminal.line(String(p.fingerprint.prefix(9))))` with its owner, then parley trust accept"
            )
        default:
            add("peer", .ok, "\(who), \(HumanFormat.trust(p.trust))")
        }

        // Advertised on the LAN.
        switch r.mdns {
        case .off: add("advertised", .skip, "mDNS is off in parleyd")
        case .unavailable:
            add(
                "advertised", .skip, "cannot tell: parleyd is cut off from avahi (see `parley doctor`)")
        case .on:
            if r.advertised {
                add("advertised", .ok, "\(name)'s mDNS advertisement is seen here")
            } else {
                add(
                    "advertised", .warn,
                    "no mDNS advertisement of \(name) is seen now: its parleyd or avahi is not running, or multicast does not get from there to here",
                    fix: p.online
                        ? nil
                        : "check \(name)'s machine is on and runs parleyd; across subnets mDNS never arrives (static peers)"
                )
            }
        }

        // An address to dial.
        let addresses = knownAddresses(r)
        if addresses.isEmpty {
            add(
                "address", .fail, "no address of \(name) is known: nothing to dial",
                fix: "ask for \(name)'s address (`parley status` on that machine) and run parley connect HOST:PORT")
        } else {
            let sources = r.dialing.map(\.source)
            let how = sources.isEmpty ? "" : " (\(Array(Set(sources)).sorted().joined(separator: ", ")))"
            add("address", .ok, addresses.prefix(TCPProbe.maxAddresses).joined(separator: ", ") + how)
        }

        // Reachable over TCP from this host.
        if p.online {
            add("reachable", .ok, "a session is up, so yes")
        } else if probes.isEmpty {
            add("reachable", .skip, addresses.isEmpty ? "no address to try" : "not probed")
        } else if let ok = probes.first(where: { $0.outcome == .accepted }) {
            add("reachable", .ok, "\(ok.address) accepts TCP connections from this host")
        } else {
            let details = probes.map { "\($0.address) \(describe($0.outcome))" }.joined(separator: "; ")
            let timedOut = probes.contains { $0.outcome == .timedOut }
            let refused = probes.contains { $0.outcome == .refused }
            add(
                "reachable", .fail, "no address of \(name) answers: \(details)",
                fix: timedOut
                    ? "the network between you is cut, \(name)'s machine is off, or a firewall drops TCP to its port: "
                        + "check the cable/Wi-Fi and that machine; parleyd redials by itself once it answers"
                    : refused
                        ? "\(name)'s machine is up but parleyd does not listen there: start it (systemctl start parleyd)"
                        : "check the address (parley status on \(name)'s machine)")
        }

        // A session.
        let failures = r.dialing.map(\.failures).reduce(0, +)
        if p.online {
            add("session", .ok, "online: a session with \(name) is up")
        } else {
            let reachable = probes.contains { $0.outcome == .accepted }
            let attempts = failures > 0 ? " (\(HumanFormat.count(failures, "dial attempt")) failed)" : ""
            let spoofed = r.dialing.contains(where: \.spoofed)
            add(
                "session", .fail, "no session with \(name)\(attempts)",
                fix: spoofed
                    ? "an advertisement claiming \(name) led to a different key: someone else answers at that address; verify \(name)'s address"
                    : reachable
                        ? "TCP reaches \(name) but no session is made: a different network key on the two sides, or its key changed "
                            + "(`parley peers`); parleyd retries by itself"
                        : "no session while \(name) cannot be reached (above); parleyd redials by itself")
        }

        // Last seen.
        if p.online {
            add("last seen", .ok, "now")
        } else if let last = p.lastSeen {
            add("last seen", .ok, "last session \(ago(nowMs - last)) ago")
        } else {
            add("last seen", .warn, "never connected")
        }
        return out
    }

    /// Every address the daemon would dial, advertised and remembered, then the peer's own
    /// list, without repeats; only `host:port` ones (the peer's list can name an mDNS
    /// target, `mdns:INSTANCE`).
    static func knownAddresses(_ r: DoctorPeerResult) -> [String] {
        var seen: Set<String> = []
        var out: [String] = []
        for a in r.dialing.flatMap(\.addresses) + r.peer.addresses where HostPort(a) != nil && seen.insert(a).inserted {
            out.append(a)
        }
        return out
    }

    static func describe(_ outcome: DoctorTCPOutcome) -> String {
        switch outcome {
        case .accepted: return "accepts"
        case .refused: return "refused the connection"
        case .timedOut: return "did not answer (timed out)"
        case .failed(let why): return "failed (\(why))"
        }
    }

    /// `40 s`, `3 min`, `2 h`, `5 days`.
    static func ago(_ ms: Int) -> String {
        let s = max(0, ms / 1000)
        if s < 120 { return "\(s) s" }
        if s < 7_200 { return "\(s / 60) min" }
        if s < 172_800 { return "\(s / 3_600) h" }
        return "\(s / 86_400) days"
    }
}
