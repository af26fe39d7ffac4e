import Foundation
import ParleyCore

#if canImport(Glibc)
    import Glibc
#endif

/// Many in-process Parley peers (rows 11 and 13), each with its own identity and card and
/// one session with the daemon under test, served by one thread that waits on all their
/// sockets with a single `poll`. Each peer behaves as the protocol asks of a member:
/// answers pings, acknowledges every chat, room chat and room operation it receives
/// (it keeps nothing, so "stored" is "received" here: the daemon's side is what is
/// measured), and accepts an invitation to a room by signing and sending a `join`
/// (docs/PROTOCOL.md "Rooms").
final class PeerSwarm: @unchecked Sendable {
    struct Member {
        let identity: BenchIdentity
        let client: NoiseClient
    }

    private let lock = NSLock()
    private var members: [Member] = []
    private var closedCount = 0
    private var stopping = false
    private var thread: JoinableThread?
    /// Chat records (direct) and room chat records received so far, over all peers.
    let chats = SharedCounter()
    let roomChats = SharedCounter()
    /// Room invitations answered with a join.
    let joinsSent = SharedCounter()
    /// Room operations received (the create, then the other members' joins).
    let roomOperations = SharedCounter()
    /// A protocol error on one session (the first), for the row's note.
    private var firstError: String?
    /// How long one `poll` waits when nothing arrives: bounds how late `stop` and a newly
    /// added session are seen (row 13 adds sessions while serving).
    static let pollMilliseconds: Int32 = 5

    init() {}

    /// Adds an established session; from now on only the serving thread touches it.
    func add(_ identity: BenchIdentity, _ client: NoiseClient) {
        lock.lock()
        members.append(Member(identity: identity, client: client))
        lock.unlock()
    }

    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return members.count
    }

    var error: String? {
        lock.lock()
        defer { lock.unlock() }
        return firstError
    }

    func start() {
        thread = JoinableThread { [self] in serve() }
    }

    /// Stops the serving thread and closes every session (the daemon sees the links drop).
    func stopAndClose() {
        lock.lock()
        stopping = true
        lock.unlock()
        thread?.join(seconds: 5)
        thread = nil
        lock.lock()
        for m in members { m.client.close() }
        members = []
        stopping = false
        lock.unlock()
    }

    private func serve() {
        var open: [ObjectIdentifier: Bool] = [:]
        while true {
            lock.lock()
            if stopping {
                lock.unlock()
                return
            }
            let snapshot = members
            lock.unlock()
            let live = snapshot.filter { open[ObjectIdentifier($0.client)] ?? true }
            if live.isEmpty {
                Clock.sleep(milliseconds: Int(Self.pollMilliseconds))
                continue
            }
            var fds = live.map { pollfd(fd: $0.client.socket.fd, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), Self.pollMilliseconds)
            guard ready > 0 else { continue }
            for (i, p) in fds.enumerated() where p.revents != 0 {
                let m = live[i]
                do {
                    let stillOpen = try m.client.serveArrived { self.reply(to: $0, as: m.identity) }
                    if !stillOpen { open[ObjectIdentifier(m.client)] = false }
                } catch {
                    open[ObjectIdentifier(m.client)] = false
                    note("\(m.identity.card.displayName): \(error)")
                }
            }
        }
    }

    private func note(_ s: String) {
        lock.lock()
        if firstError == nil { firstError = s }
        lock.unlock()
    }

    /// What a member answers to one record.
    private func reply(to record: AppRecord, as me: BenchIdentity) -> [AppRecord] {
        switch record {
        case .ping(let n):
            return [.pong(n)]
        case .chat(let c):
            chats.add(1)
            return [.ack([c.id])]
        case .roomChat(let c):
            roomChats.add(1)
            return [.ack([c.id])]
        case .roomOperation(let op):
            roomOperations.add(1)
            var out: [AppRecord] = [.ack([op.hash.ackID])]
            var invited = false
            if case .create(_, let listed, _) = op.change { invited = listed.contains(me.identity.publicKey) }
            // A room larger than a create lists invites the others by adds (one key each).
            if case .add(let k) = op.change { invited = k == me.identity.publicKey }
            if invited, op.actor != me.identity.publicKey {
                // Accept the invitation: a join following the create or the add (PROTOCOL.md
                // "Room operations"); the daemon sends the room's log before the add.
                do {
                    let join = try RoomOperation.change(
                        .join, roomID: op.roomID, after: [op], by: me.identity,
                        createdAt: BenchIdentity.unixSeconds() * 1000)
                    out.append(.roomOperation(join))
                    joinsSent.add(1)
                } catch {
                    note("join: \(error)")
                }
            }
            return out
        default:
            return []
        }
    }

    /// Opens a session per identity to the daemon on `port`, `parallel` at a time (each
    /// connection its own loopback source address, as in row 7), and adds them.
    /// Returns how many opened; throws if any failed (the first failure in the message).
    @discardableResult
    func connect(
        port: Int, identities: [BenchIdentity], parallel: Int, deadline: Deadline
    ) throws(BenchError) -> Int {
        let failures = SharedCounter()
        let firstFailure = FirstText()
        let next = TicketCounter()
        var threads: [JoinableThread] = []
        for _ in 0..<max(1, parallel) {
            threads.append(
                JoinableThread { [self] in
                    while true {
                        let i = next.take()
                        guard i < identities.count else { return }
                        do {
                            let c = try NoiseClient.connect(
                                port: port, as: identities[i], deadline: Deadline(seconds: 10))
                            add(identities[i], c)
                        } catch {
                            failures.add(1)
                            firstFailure.set("\(error)")
                        }
                    }
                })
        }
        for t in threads { t.join(seconds: max(1, Double(deadline.millisecondsLeft) / 1000)) }
        let opened = identities.count - failures.get()
        if failures.get() > 0 {
            throw .protocolError(
                "\(failures.get()) of \(identities.count) sessions failed to open: \(firstFailure.get() ?? "")")
        }
        return opened
    }
}

/// The first of several texts written by concurrent threads.
final class FirstText: @unchecked Sendable {
    private let lock = NSLock()
    private var value: String?
    func set(_ s: String) {
        lock.lock()
        if value == nil { value = s }
        lock.unlock()
    }
    func get() -> String? {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}

/// Hands out 0, 1, 2, … to concurrent threads.
final class TicketCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func take() -> Int {
        lock.lock()
        defer {
            value += 1
            lock.unlock()
        }
        return value
    }
}
