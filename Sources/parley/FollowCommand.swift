import ArgumentParser
import Foundation
import ParleyControlProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// `parley follow [PEER]`: print events as they happen until interrupted.
struct FollowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "follow",
        abstract: "Print incoming messages, deliveries and peer changes as they happen (Ctrl-C to stop).",
        discussion: """
            With --json, one object per line: the event's params plus "event": the notification method. \
            Every event carries an "eventId"; a script that restarts passes the last one it saw to --since \
            and receives everything that happened meanwhile, then live events. If parleyd restarts, follow \
            waits for it, resumes after the last event it printed (nothing is lost or printed twice) and goes on.
            """)

    /// Between attempts to reach a daemon that went away.
    static let reconnectInterval: Duration = .milliseconds(500)

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "Only events concerning this peer (display name or fingerprint prefix), or #ROOM.")
    var peer: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "First replay every event after this eventId (the last one seen), then follow live.", valueName: "id"))
    var since: Int?

    func validate() throws { try validateForCommandLine(MessagesSubscribeParams(peer: peer, since: since)) }

    func run() throws {
        // Ctrl-C is the normal way to stop following: exit 0 at once. Every line was
        // written unbuffered, so nothing is lost; _exit is async-signal-safe.
        signal(SIGINT) { _ in _exit(0) }
        var names: [String: String] = [:]
        var lastEventID = since
        var client = try Session.connect(options, peer: peer)
        while true {
            do {
                try follow(client, names: &names, lastEventID: &lastEventID)
            } catch let error as ControlClientError where Self.isDaemonGone(error) {
                client.close()
                // A restart of parleyd: wait for it and resume after the last event shown.
                Console.err("parley: \(Terminal.line(error.description)); reconnecting…")
                client = Self.reconnect(options)
                Console.err("parley: reconnected to parleyd")
            } catch let error as ControlClientError {
                client.close()
                Session.report(error, options: options, peer: peer)
                throw ExitCode(Session.exitStatus(for: error))
            }
        }
    }

    /// Subscribes on `client` (resuming after `lastEventID`) and prints events until the
    /// connection fails.
    private func follow(_ client: ControlClient, names: inout [String: String], lastEventID: inout Int?) throws {
        if !options.json {
            for known in try client.call(PeersListParams()).peers { names[known.fingerprint] = known.name }
        }
        let subscribed = try client.call(MessagesSubscribeParams(peer: peer, since: lastEventID))
        // Resuming after a restart starts from here even if no event came yet.
        if lastEventID == nil { lastEventID = subscribed.lastEventId }
        while true {
            let notification = try client.readNotification()
            if case .int(let id)? = notification.params?["eventId"] { lastEventID = id }
            try show(notification, names: &names)
        }
    }

    static func isDaemonGone(_ error: ControlClientError) -> Bool {
        switch error {
        case .connectionClosed, .io: return true
        default: return false
        }
    }

    /// Tries until parleyd answers again (Ctrl-C stops, as always).
    static func reconnect(_ options: ConnectionOptions) -> ControlClient {
        while true {
            if let client = try? ControlClient.connect(path: options.socketPath()) { return client }
            Thread.sleep(forTimeInterval: Double(reconnectInterval.components.attoseconds) / 1e18)
        }
    }

    private func show(_ notification: JSONRPCNotification, names: inout [String: String]) throws {
        if options.json {
            var members = notification.params ?? [:]
            members["event"] = .string(notification.method)
            Console.json(JSONValue.object(members))
            if notification.method == ControlEvent.subscriptionClosed { throw ExitCode(CLIExitCode.daemonError) }
            return
        }
        let event: ControlEventPayload
        do {
            event = try ControlEventPayload(notification)
        } catch {
            throw ControlClientError.protocolViolation("malformed \(notification.method) notification")
        }
        try printHuman(event, names: &names)
    }

    private func printHuman(_ event: ControlEventPayload, names: inout [String: String]) throws {
        let now = HumanFormat.now()
        switch event {
        case .messageReceived(let e):
            Console.out(HumanFormat.message(e.message))
        case .messageDelivered(let e):
            let who = names[e.to].map(Terminal.line) ?? Terminal.line(e.to)
            Console.out("[\(HumanFormat.time(e.deliveredAt))] ✓ delivered to \(who)")
        case .messageRead(let e):
            let who = names[e.to].map(Terminal.line) ?? Terminal.line(e.to)
            Console.out("[\(HumanFormat.time(e.readAt))] ✓✓ read by \(who)")
        case .messageRefused(let e):
            let who = names[e.to].map(Terminal.line) ?? Terminal.line(e.to)
            Console.out(
                "[\(HumanFormat.time(e.refusedAt))] ✗ not stored by \(who): \(Terminal.line(e.text)); it stays queued")
        case .peerOnline(let e):
            names[e.peer.fingerprint] = e.peer.name
            Console.out("[\(now)] \(Terminal.line(e.peer.name)) is online")
        case .peerOffline(let e):
            names[e.peer.fingerprint] = e.peer.name
            Console.out("[\(now)] \(Terminal.line(e.peer.name)) is offline")
        case .peerNew(let e):
            HumanFormat.newPeerNotice(e).forEach { Console.out("[\(now)] " + $0) }
        case .subscriptionClosed(let e):
            Console.err(
                "parley: \(Terminal.line(e.message)). Run `parley follow` again; use `parley read` for what you missed."
            )
            throw ExitCode(CLIExitCode.daemonError)
        case .roomUpdated(let e):
            HumanFormat.roomUpdated(e.room, at: now).forEach(Console.out)
        case .messageUpdated(let e):
            let what =
                e.message.deletedAt != nil
                ? "deleted" : e.message.room?.afterRemoval == true ? "marked" : e.message.editedAt != nil ? "edited" : "changed"
            Console.out("[\(now)] \(what): " + HumanFormat.message(e.message))
        case .peerStatus(let e):
            Console.out(
                "[\(now)] \(Terminal.line(e.name))"
                    + (e.status.isEmpty ? " cleared their status" : " is \"\(Terminal.line(e.status))\""))
        case let .file(method, t):
            // Progress is for bars (`parley get`), not for a log of what happened.
            if method != ControlEvent.fileProgress { Console.out("[\(now)] \(method): " + FileLines.summary(t)) }
        case .unknown:
            break  // an event from a newer daemon: nothing to show in this version
        }
    }
}
