import ArgumentParser
import Foundation
import ParleyControlProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// `parley notify`: the person's desktop notifications. A small agent in the desktop
/// session (the systemd user unit `parley-notify.service`) that follows the person's own
/// parleyd over the control socket, as `parley follow` does, and shows each new message or
/// file offer through the desktop's notification service (org.freedesktop.Notifications on
/// the session bus). What and when: `NotificationPlanner` (a hostile peer's flood becomes
/// one summary at a time); what it says: `NotificationText` (no markup from peers, names
/// with their fingerprint unless verified). The daemon's `notify_command` hook is separate
/// and unchanged: it runs as the daemon, and cannot reach a person's desktop session.
struct NotifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify",
        abstract: "Show desktop notifications for new messages and files (runs in your desktop session).",
        discussion: """
            Follows your parleyd and shows a notification through the desktop's notification \
            service (D-Bus, org.freedesktop.Notifications) for each new message or file offer; \
            a burst of messages becomes one summary. Runs until stopped; reconnects when \
            parleyd restarts. Usually run by the systemd user unit: \
            systemctl --user enable --now parley-notify
            """)

    /// Peers' trust is looked up again after this long, so a verification shows soon.
    static let trustRefreshSeconds = 10.0

    @OptionGroup var options: ConnectionOptions

    func run() throws {
        let notifier: DesktopNotifier
        do {
            notifier = try DesktopNotifier(address: ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"])
        } catch {
            Console.err("parley: notify: \(error)")
            throw ExitCode(CLIExitCode.daemonError)
        }
        let agent = NotifyAgent(notifier: notifier)
        var client = try Session.connect(options)
        while true {
            do {
                try agent.follow(client, socketPath: options.socketPath())
            } catch  where FollowCommand.isDaemonGone(error) {
                client.close()
                Console.err("parley: notify: \(Terminal.line(error.description)); reconnecting…")
                client = FollowCommand.reconnect(options)
            } catch {
                client.close()
                Session.report(error, options: options, peer: nil)
                throw ExitCode(Session.exitStatus(for: error))
            }
        }
    }

    /// The peer an event is from (whose trust decides how it is named).
    static func sender(of event: ControlEventPayload) -> String? {
        switch event {
        case .messageReceived(let e): return e.message.from
        case .file(_, let info): return info.peer
        default: return nil
        }
    }

    /// What an event shows, if anything: incoming messages and file offers.
    static func incoming(_ event: ControlEventPayload, verified: Bool) -> NotificationPlanner.Incoming? {
        switch event {
        case .messageReceived(let e) where e.message.direction == .incoming:
            let m = e.message
            let sender = NotificationText.sender(name: m.fromName, fingerprint: m.from, verified: verified)
            if let room = m.room {
                let name = NotificationText.plain(room.name.hasPrefix("#") ? room.name : "#" + room.name, limit: 32)
                return .init(key: "room:\(room.id)", title: "\(sender) in \(name)", body: m.body)
            }
            return .init(key: "peer:\(m.from)", title: sender, body: m.body)
        case .file(let method, let info) where method == ControlEvent.fileOffered && info.direction == "in":
            let sender = NotificationText.sender(name: info.peerName, fingerprint: info.peer, verified: verified)
            let key = info.room.map { "room:\($0)" } ?? "peer:\(info.peer)"
            var body = "sends a file: \(info.name) (\(FileLines.size(info.size)))"
            if let caption = info.caption, !caption.isEmpty { body += "\n\(caption)" }
            return .init(key: key, title: sender, body: body)
        default:
            return nil
        }
    }
}

/// The loop's state: the planner, the peers' trust, the last event seen (to resume after
/// a daemon restart without losing or repeating anything).
final class NotifyAgent {
    let notifier: DesktopNotifier
    let start = ContinuousClock.now
    var planner: NotificationPlanner
    var trust = TrustCache()
    var lastEventID: Int?

    init(notifier: DesktopNotifier) {
        self.notifier = notifier
        planner = NotificationPlanner(now: 0)
    }

    func now() -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// Subscribes on `client` (resuming after the last event) and shows notifications until
    /// the connection fails.
    func follow(_ client: ControlClient, socketPath: String) throws(ControlClientError) {
        let subscribed = try client.call(MessagesSubscribeParams(peer: nil, since: lastEventID))
        if lastEventID == nil { lastEventID = subscribed.lastEventId }
        Console.out("parley notify: following parleyd at \(socketPath); notifications go to the desktop")
        while true {
            let wait = planner.nextTick().map { Duration.milliseconds(Int(max(0.01, $0 - now()) * 1000)) }
            let notification: JSONRPCNotification
            do {
                notification = try client.readNotification(timeout: wait)
            } catch {
                guard case .timedOut = error else { throw error }
                tick()
                continue
            }
            if case .int(let id)? = notification.params?["eventId"] { lastEventID = id }
            // Only what shows asks for the sender's trust (a peers.list now and then).
            guard let event = try? ControlEventPayload(notification),
                NotifyCommand.incoming(event, verified: false) != nil
            else {
                tick()
                continue
            }
            let verified = NotifyCommand.sender(of: event).map { trust.isVerified($0, client: client, now: now()) }
            if let incoming = NotifyCommand.incoming(event, verified: verified ?? false),
                let show = planner.receive(incoming, now: now())
            {
                notifier.show(show)
            }
            tick()
        }
    }

    func tick() {
        if let show = planner.tick(now: now()) { notifier.show(show) }
    }
}

/// Which peers the person has verified, from `peers.list`, looked up again when a sender is
/// unknown or the list is older than `NotifyCommand.trustRefreshSeconds`. Unknown stays
/// unverified: a name is shown with its fingerprint unless verification is certain.
struct TrustCache {
    private var verified: Set<String> = []
    private var known: Set<String> = []
    private var fetchedAt: Double?

    mutating func isVerified(_ fingerprint: String, client: ControlClient, now: Double) -> Bool {
        if !known.contains(fingerprint) || fetchedAt.map({ now - $0 > NotifyCommand.trustRefreshSeconds }) ?? true {
            if let peers = try? client.call(PeersListParams()).peers {
                known = Set(peers.map(\.fingerprint))
                verified = Set(peers.filter { $0.trust == .verified }.map(\.fingerprint))
                fetchedAt = now
            }
        }
        return verified.contains(fingerprint)
    }
}

/// Shows `NotificationPlanner.Show`s on the session bus, one notification per conversation
/// (`replaces_id`: the id the server gave the conversation's last one).
final class DesktopNotifier {
    /// Conversations whose notification id is remembered; beyond this the oldest are
    /// forgotten (their next notification is a new one).
    static let maxRememberedIDs = 256

    private let address: String?
    private var connection: DBusConnection?
    private var learned = false
    private var ids: [String: UInt32] = [:]
    private var order: [String] = []

    /// Whether the notification server renders body markup (its capabilities, asked on
    /// each new connection); until known, assumed (escaping is the safe side).
    private var rendersMarkup = true

    /// Connects at once, so a missing session bus is said at start.
    init(address: String?) throws {
        self.address = address
        connection = try DBusConnection(address: address)
    }

    /// Asks the server's capabilities; a server that cannot answer (none yet: D-Bus starts
    /// one on the first Notify) is taken as rendering markup.
    private func learnCapabilities(_ bus: DBusConnection) {
        let reply = try? bus.call(
            destination: NotifyCall.destination, path: NotifyCall.path, interface: NotifyCall.interface,
            member: "GetCapabilities")
        rendersMarkup = reply?.stringArray.map { $0.contains("body-markup") } ?? true
    }

    func show(_ show: NotificationPlanner.Show) {
        // Once more on a new connection if the bus went away (a session bus restart).
        for attempt in 0..<2 {
            do {
                let bus: DBusConnection
                if let connection {
                    bus = connection
                } else {
                    bus = try DBusConnection(address: address)
                    connection = bus
                    learned = false
                }
                if !learned {
                    learnCapabilities(bus)
                    learned = true
                }
                let body = NotifyCall.body(
                    replacesID: ids[show.key] ?? 0, summary: NotificationText.plain(show.title),
                    body: NotificationText.body(show.body, serverRendersMarkup: rendersMarkup))
                let reply = try bus.call(
                    destination: NotifyCall.destination, path: NotifyCall.path, interface: NotifyCall.interface,
                    member: "Notify", signature: NotifyCall.signature, body: body)
                if let id = reply.firstUInt32 { remember(id, for: show.key) }
                return
            } catch DBusConnection.Failure.remote(let name, let message) {
                Console.err("parley: notify: the notification service refused: \(name): \(Terminal.line(message))")
                return
            } catch {
                connection = nil
                if attempt == 1 { Console.err("parley: notify: \(error)") }
            }
        }
    }

    private func remember(_ id: UInt32, for key: String) {
        if ids[key] == nil { order.append(key) }
        ids[key] = id
        if order.count > Self.maxRememberedIDs { ids[order.removeFirst()] = nil }
    }
}
