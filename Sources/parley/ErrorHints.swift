import ParleyControlProtocol

/// How the CLI chose the socket it could not reach, for the hint.
struct SocketLookup {
    /// `--socket` or `$PARLEY_SOCKET` named it.
    var given: Bool
    /// Where parley looked otherwise, in order.
    var candidates: [String]
    /// The socket's directory as this user can see it; nil when they cannot even look
    /// (it lies inside a directory of someone else's).
    var directory: SocketDirectory?
}

/// The directory holding a socket this user may not use: whose it is and whether its group
/// may enter (then the daemon serves its group: the system service and group `parley`).
struct SocketDirectory: Equatable {
    var ownerName: String?
    var groupName: String?
    var groupMayEnter: Bool
}

/// What the user should do next after an error, beyond the daemon's message.
enum ErrorHints {
    /// For a Parley of one's own (`parleyd@NAME`, README "Several people on one host").
    static let ownInstance = "sudo systemctl enable --now parleyd@$USER"

    /// The next step when the socket cannot be reached: a permission problem names whose
    /// socket it is and what joining its group would mean, or says to start a daemon
    /// (nothing there), naming every place parley looked.
    ///
    /// Joining a group is suggested only for a daemon that serves its group (the socket's
    /// directory lets the group in, as the system service's /run/parley does for group
    /// parley), and with what it means: everyone in it shares that one identity and reads
    /// all its messages. Any other socket is a person's own (`parleyd@NAME`: a 0700
    /// directory) and serves nobody else; its owner's group (their private group, or a
    /// group such as `users` every account shares) would give nothing but access to the
    /// owner's other group files, so it is never suggested.
    static func cannotConnect(path: String, reason: String, lookup: SocketLookup) -> String {
        if reason.localizedCaseInsensitiveContains("permission denied") {
            if let directory = lookup.directory, directory.groupMayEnter, let group = directory.groupName {
                return "You are not in group \(group): sudo usermod -aG \(group) $USER, then log in again. "
                    + "Everyone in group \(group) shares that one Parley identity and reads all of its messages; "
                    + "for a Parley of your own instead: \(ownInstance)"
            }
            let whose = lookup.directory?.ownerName.map { "\($0)'s own Parley" } ?? "another user's Parley"
            return "\(path) is \(whose), which serves nobody else. For a Parley of your own: \(ownInstance) "
                + "(parley then finds it with no flags)."
        }
        if lookup.given {
            return
                "Is parleyd running with --socket \(path)? (--socket and $PARLEY_SOCKET name the daemon's control socket.)"
        }
        return "Is parleyd running? parley looked at \(lookup.candidates.joined(separator: " and ")). "
            + "Start your own with `parleyd` (`make run` in a checkout) or the system service with "
            + "`sudo systemctl start parleyd`; --socket or $PARLEY_SOCKET name another socket."
    }

    static func hint(for error: ControlClientError, peer: String?, socket: SocketLookup? = nil) -> String? {
        if case .cannotConnect(let path, let reason) = error, let socket {
            return cannotConnect(path: path, reason: reason, lookup: socket)
        }
        guard case .remote(let remote) = error, let code = remote.knownCode else { return nil }
        let who = peer.map(Terminal.line) ?? "PEER"
        switch code {
        case .peerNotFound:
            return "Run `parley peers` to list known peers, or `parley connect HOST:PORT` to reach a new one."
        case .peerAmbiguous:
            var lines = ["Several peers match; a name is only a label, so say which key (a fingerprint prefix):"]
            for candidate in remote.payload(as: PeerAmbiguousData.self)?.candidates ?? [] {
                lines.append(
                    "  \(Terminal.line(candidate.name))  \(Terminal.line(candidate.fingerprint))"
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
            return
                "Run `parley read --ids \(peer.map { ShellQuoting.word(Terminal.line($0)) } ?? "PEER")` to see message ids; any 8 or more of their first digits will do."
        case .connectFailed:
            return "Check the address and that parleyd runs there (`parley status` on that machine shows its "
                + "listen addresses), then run `parley connect` again."
        case .transferNotFound:
            return "Run `parley files` to list transfers and their ids; any 4 or more of their first digits will do."
        case .fileNotSendable, .transferState:
            return nil  // the daemon's message says what is wrong with the file or the transfer
        case .methodNotFound:
            return "This parleyd does not know the command; are parley and parleyd the same version?"
        case .parseError, .invalidRequest, .invalidParams, .internalError, .notPermitted,
            .lineTooLong, .subscriberTooSlow:
            return nil
        }
    }
}
