import ParleyControlProtocol

/// What the user should do next after an error, beyond the daemon's message.
enum ErrorHints {
    static func hint(for error: ControlClientError, peer: String?) -> String? {
        guard case .remote(let remote) = error, let code = remote.knownCode else { return nil }
        let who = peer.map(Terminal.line) ?? "PEER"
        switch code {
        case .peerNotFound:
            return "Run `parley peers` to list known peers, or `parley connect HOST:PORT` to reach a new one."
        case .peerAmbiguous:
            var lines = ["Several peers match; a name is only a label, so say which key (a fingerprint prefix):"]
            for candidate in remote.payload(as: PeerAmbiguousData.self)?.candidates ?? [] {
                lines.append("  \(Terminal.line(candidate.name))  \(Terminal.line(candidate.fingerprint))"
                    + (candidate.trust.map { "  \($0.rawValue)" } ?? ""))
            }
            lines.append("Or give one your own name for it: parley trust nickname FINGERPRINT NAME")
            return lines.joined(separator: "\n")
        case .peerNotTrusted:
            return nil  // the daemon's message names the state and the command to run
        case .bodyTooLarge:
            return "Shorten the message or send it in several parts."
        case .storageFailed:
            return "Nothing was accepted. Free disk space where parleyd keeps its state, then retry."
        case .timeout:
            if let id = remote.payload(as: SendTimeoutData.self)?.id {
                return "The message (id \(Terminal.line(id))) stays queued and is delivered when \(who) comes online."
            }
            return nil
        case .fingerprintMismatch:
            return "Do NOT trust \(who) yet: check that you read the full fingerprint from \(who)'s own device "
                + "(`parley whoami` there). If it really differs, someone may be impersonating \(who)."
        case .invalidAddress:
            return "Use host:port, e.g. 192.168.1.20:7777 or [fe80::1%eth0]:7777."
        case .tooManyClients:
            return "Close other parley clients (e.g. running `parley follow`) and retry."
        case .eventsExpired:
            return "Events that old are no longer kept. Catch up with `parley read` (or `parley export`), "
                + "then run `parley follow` without --since."
        case .roomNotFound:
            return "Run `parley rooms` to list your rooms, or `parley room create NAME PEER...` to start one."
        case .roomAmbiguous:
            var lines = ["Several rooms match; use an id prefix:"]
            for candidate in remote.payload(as: RoomAmbiguousData.self)?.candidates ?? [] {
                lines.append("  #\(Terminal.line(candidate.name))  \(Terminal.line(candidate.id))")
            }
            return lines.joined(separator: "\n")
        case .messageNotFound:
            return "Run `parley read --ids \(who)` to see message ids; any 8 or more of their first digits will do."
        case .methodNotFound:
            return "This parleyd does not know the command; are parley and parleyd the same version?"
        case .parseError, .invalidRequest, .invalidParams, .internalError, .notPermitted,
             .lineTooLong, .subscriberTooSlow:
            return nil
        }
    }
}
