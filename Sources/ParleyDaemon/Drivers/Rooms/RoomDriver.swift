import NIOCore
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Rooms (docs/PROTOCOL.md, "Rooms"): membership operations, signed, stored, resolved and
/// forwarded to members, and room messages, sent by their author to members over the
/// pairwise sessions, queued and acknowledged per member. It owns the rooms' state in
/// memory (`RoomBook`: each room's decoded operations and incremental resolution, the
/// operations waiting for a parent, the messages held until their author is known as a
/// member, the room cards) and performs what the pure decisions say: `RoomAdmission` and
/// `RoomIntake` (which operation is kept), `RoomDistribution` (who gets what, which
/// messages are taken), `WaitingRoomOperations` and `HeldRoomChats` (what is held, how
/// much), `RoomCardAdmission` (cards).
///
/// - RoomDriver+Operations.swift: accepting an operation (own or a peer's), waiting ones
///   retried when their room moves, distribution.
/// - RoomDriver+LocalAPI.swift: create, change, accept, decline, send (the control side).
/// - RoomDriver+Traffic.swift: a session's room records, held messages, acks, the pumps.
/// - RoomDriver+Cards.swift: room cards.
///
/// It sees the store only as `RoomStore` and the node only as `RoomHost`. Its state lives
/// on the node's event loop (the loop is its lock).
final class RoomDriver<Host: RoomHost> {
    typealias Link = Host.Link

    /// Only the rooms' concern of the store.
    let store: any RoomStore
    let loop: EventLoop
    let clock: any NodeClock
    let log: Logger
    /// This node's identity, and its key that signs our operations.
    let me: IdentityPublicKey
    let identity: IdentityKeyPair
    /// Whether a room member's card learnt through the room is pinned or held for approval.
    let newIdentities: TrustDecision.NewIdentityPolicy
    /// What any peer with a session can make this node log (room messages held from an
    /// author that is not a joined member): once per author per interval, so naming a room
    /// this node is in does not let a non-member write the log at will.
    let heldLog: RateLimitedLog
    /// The node (set once it is built; it owns this driver).
    unowned var host: Host?
    /// The rooms' state in memory (room sync's part, `book.sync`, is `RoomSyncDriver`, reached
    /// through Node+RoomSync.swift).
    var book: RoomBook

    init(
        store: any RoomStore, identity: IdentityKeyPair, newIdentities: TrustDecision.NewIdentityPolicy,
        loop: EventLoop, clock: any NodeClock, log: Logger, sync: RoomSyncDriver<Node>
    ) {
        self.book = RoomBook(sync: sync)
        self.store = store
        self.identity = identity
        self.me = identity.publicKey
        self.newIdentities = newIdentities
        self.loop = loop
        self.clock = clock
        self.log = log
        self.heldLog = RateLimitedLog(logger: log, level: .info, interval: .seconds(60))
    }

    var nowMs: Int64 { clock.wallMilliseconds() }

    // MARK: The room book

    /// The room's operations and state, from memory or loaded from the store. A room the
    /// store holds nothing of is not remembered: any peer can name any room id (in a chat,
    /// an operation, a card), and each would otherwise stay in memory for good.
    func entry(_ id: RoomID) throws(StoreError) -> RoomBook.Entry {
        if let e = book.entries[id] { return e }
        var entry = RoomBook.Entry()
        for stored in try store.roomOperations(room: id) {
            do {
                let op = try RoomOperation.decode(stored.encoded)
                entry.operations[op.hash] = op
            } catch {
                // Only operations that verified were stored: a damaged row, not an attack.
                log.warning("stored room operation does not decode; ignored", ["room": id.hex, "error": "\(error)"])
            }
        }
        guard !entry.operations.isEmpty else { return entry }
        if let rec = try store.room(id: id), let root = entry.operations[rec.root] {
            entry.root = root
            entry.resolution = RoomResolution(root: root, operations: Array(entry.operations.values))
            entry.state = entry.resolution?.state
        }
        book.entries[id] = entry
        return entry
    }

    /// Resolves every stored room again from its operations and rewrites the cached state
    /// where it differs (issue 29: the operations are the truth, the cache is cheap to
    /// rebuild, so this runs at every start). Returns the rooms whose state changed.
    @discardableResult
    func reResolveStoredRooms() throws(StoreError) -> [RoomRecord] {
        var changed: [RoomRecord] = []
        for previous in try store.rooms() where previous.status != .retired {
            let entry = try entry(previous.id)
            guard let state = entry.state else { continue }
            var now = record(state, previous: previous, deliveredBy: nil, now: previous.updatedAt)
            guard now != previous else { continue }
            now.updatedAt = nowMs
            try store.saveRoom(now)
            changed.append(now)
            log.info(
                "room resolved again under the current rule",
                [
                    "room": now.name, "id": now.id.hex, "status": now.status.rawValue, "was": previous.status.rawValue,
                    "joined": "\(now.joined.count)", "wasJoined": "\(previous.joined.count)"
                ])
            host?.emit(.roomUpdated(now))
        }
        return changed
    }

    /// What the store caches of a resolved room: this node's relation to it, and who
    /// invited it (the peer that delivered the invitation, kept while it stays invited).
    func record(_ s: RoomState, previous: RoomRecord?, deliveredBy peer: IdentityPublicKey?, now: Int64)
        -> RoomRecord
    {
        let status: RoomStatus = s.hasJoined(me) ? .joined : s.isInvited(me) ? .invited : .left
        let inviter = status == .invited ? (previous?.status == .invited ? previous?.inviter : peer) : nil
        return RoomRecord(
            id: s.roomID, root: s.root, name: s.name, creator: s.creator,
            createdAt: Int64(clamping: s.createdAt), version: Int64(clamping: s.version),
            members: s.members, status: status, roles: s.roles,
            joined: s.joined, onlyAdminsAdd: s.policy.onlyAdminsAdd,
            inviter: inviter, updatedAt: now)
    }

    func saveState(_ s: RoomState, previous: RoomRecord?, deliveredBy peer: IdentityPublicKey?, now: Int64)
        throws(StoreError)
    {
        try store.saveRoom(record(s, previous: previous, deliveredBy: peer, now: now))
    }

    /// Finds a room by `#name`, name, or id prefix (at least 4 hex digits), `#` optional.
    func resolve(_ selector: String) throws -> RoomRecord {
        let query = selector.hasPrefix("#") ? String(selector.dropFirst()) : selector
        let all: [RoomRecord]
        do { all = try store.rooms() } catch { throw NodeError.storage(error) }
        for match in [
            { (r: RoomRecord) in r.name == query },
            { (r: RoomRecord) in r.name.lowercased() == query.lowercased() }
        ] {
            let found = all.filter(match)
            // Prefer rooms we are still in: an old room we left may share the name.
            let current = found.filter(\.isMember)
            if current.count == 1 { return current[0] }
            if found.count == 1 { return found[0] }
            if found.count > 1 { throw RoomError.ambiguous(selector, found) }
        }
        let prefix = query.lowercased()
        if prefix.count >= RoomDaemonLimits.minIDPrefix, prefix.allSatisfy(\.isHexDigit) {
            let found = all.filter { $0.id.hex.hasPrefix(prefix) }
            if found.count == 1 { return found[0] }
            if found.count > 1 { throw RoomError.ambiguous(selector, found) }
        }
        throw RoomError.notFound(selector)
    }

    /// Runs store work, turning its failure into the node's storage error.
    func storing<T>(_ body: () throws(StoreError) -> T) throws(NodeError) -> T {
        do { return try body() } catch { throw .storage(error) }
    }
}
