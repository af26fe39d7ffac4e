import Foundation
import GRDB
import ParleyCore

// Peers this node has pinned, with their latest accepted card and trust state.
extension Store {
    static let peerColumns = """
        identity, display_name, host_name, card, card_sequence, noise_key, trust, first_seen, \
        last_seen, last_address, replaced_by, nickname
        """

    public func peer(identity: IdentityPublicKey) throws(StoreError) -> PeerRecord? {
        try read { db in try Self.peer(db, identity: identity) }
    }

    /// Every known peer, replaced ones included, ordered by name then identity.
    public func peers() throws(StoreError) -> [PeerRecord] {
        try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Self.peerColumns) FROM peer ORDER BY display_name, identity
                    """)
            return try Self.fetchPeers(statement, [])
        }
    }

    /// Current (not replaced) peers with exactly this display name. More than one means
    /// two nodes claim the name.
    public func peers(named displayName: String) throws(StoreError) -> [PeerRecord] {
        try InputValidation.requireNoNUL(displayName, "display name")
        return try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Self.peerColumns) FROM peer WHERE display_name = ? AND replaced_by IS NULL
                    ORDER BY first_seen, identity
                    """)
            return try Self.fetchPeers(statement, [displayName])
        }
    }

    /// The peer last seen at `address` ("host:port"), preferring current over replaced
    /// identities, then the most recently seen.
    public func peer(atAddress address: String) throws(StoreError) -> PeerRecord? {
        try InputValidation.requireNoNUL(address, "address")
        return try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Self.peerColumns) FROM peer WHERE last_address = ?
                    ORDER BY replaced_by IS NOT NULL, last_seen DESC LIMIT 1
                    """)
            return try Self.fetchPeers(statement, [address]).first
        }
    }

    /// Inserts or overwrites the peer with `record.identity`. Every field is taken from
    /// `record` except `firstSeen`, which keeps the earlier of the stored and given values.
    /// `replacedBy`, if set, must name a known peer (`.conflict` otherwise).
    public func upsertPeer(_ record: PeerRecord) throws(StoreError) {
        try Self.validate(record)
        try write { db in try Self.upsertPeer(db, record) }
    }

    /// Sets the trust state of a known peer; `.notFound` if unknown.
    public func setTrust(identity: IdentityPublicKey, _ trust: TrustState) throws(StoreError) {
        try write { db in
            let update = try db.cachedStatement(sql: "UPDATE peer SET trust = ? WHERE identity = ?")
            try update.execute(arguments: [trust.rawValue, identity.hex])
            guard db.changesCount == 1 else { throw StoreError.notFound("peer \(identity.hex)") }
        }
    }

    /// Sets (or, with nil, clears) the person's nickname for a peer; `.notFound` if unknown.
    public func setNickname(identity: IdentityPublicKey, _ nickname: String?) throws(StoreError) {
        if let nickname { try InputValidation.requireNoNUL(nickname, "nickname") }
        try write { db in
            let update = try db.cachedStatement(sql: "UPDATE peer SET nickname = ? WHERE identity = ?")
            try update.execute(arguments: [nickname, identity.hex])
            guard db.changesCount == 1 else { throw StoreError.notFound("peer \(identity.hex)") }
        }
    }

    /// A person replaced a contact's key (the contact reinstalled): in ONE transaction, the
    /// new identity (already a known peer: it connected) becomes `verified` and current,
    /// the old one is marked replaced by it, the old one's undelivered messages move to it,
    /// and the replacement is recorded as history (an accepted `key_change`). Returns how
    /// many queued messages moved. `.notFound` if either is unknown; `.conflict` if the old
    /// one was already replaced.
    @discardableResult
    public func replacePeer(old: IdentityPublicKey, new: IdentityPublicKey, at: Int64) throws(StoreError) -> Int {
        guard old != new else { throw .invalidArgument("a key cannot replace itself") }
        return try write { db in
            guard let oldPeer = try Self.peer(db, identity: old) else { throw StoreError.notFound("peer \(old.hex)") }
            guard let newPeer = try Self.peer(db, identity: new) else { throw StoreError.notFound("peer \(new.hex)") }
            if let by = oldPeer.replacedBy {
                throw StoreError.conflict("peer \(old.hex) was already replaced by \(by.hex)")
            }
            let current = try db.cachedStatement(
                sql: """
                    UPDATE peer SET replaced_by = NULL, trust = 'verified' WHERE identity = ?
                    """)
            try current.execute(arguments: [new.hex])
            let replace = try db.cachedStatement(sql: "UPDATE peer SET replaced_by = ? WHERE identity = ?")
            try replace.execute(arguments: [new.hex, old.hex])
            let moved = try Self.retarget(db, from: old, to: new)
            let history = try db.cachedStatement(
                sql: """
                    INSERT INTO key_change (display_name, old_identity, new_identity, new_card, address, detected_at,
                                            status, resolved_at, prior_trust)
                    VALUES (?, ?, ?, ?, ?, ?, 'accepted', ?, ?)
                    """)
            try history.execute(arguments: [
                oldPeer.label, old.hex, new.hex, Data(newPeer.card), newPeer.lastAddress, at, at,
                oldPeer.trust == .pending ? TrustState.pinned.rawValue : oldPeer.trust.rawValue
            ])
            return moved
        }
    }

    /// The keys a contact had before its current one, newest first (each replaced by the next).
    public func previousKeys(of identity: IdentityPublicKey) throws(StoreError) -> [PeerRecord] {
        try read { db in
            var chain: [PeerRecord] = []
            var current = identity
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Self.peerColumns) FROM peer WHERE replaced_by = ? ORDER BY last_seen DESC LIMIT 1
                    """)
            // Bounded: a chain longer than the peer table would mean a cycle.
            for _ in 0..<1_000 {
                guard let previous = try Self.fetchPeers(statement, [current.hex]).first,
                    !chain.contains(where: { $0.identity == previous.identity })
                else { break }
                chain.append(previous)
                current = previous.identity
            }
            return chain
        }
    }

    /// Forgets a peer: its pin, trust, nickname and replacement history go; its messages
    /// stay (history is the person's, and a queue is keyed by identity, so if the same key
    /// comes back it is a first contact again and the queue flows). `.notFound` if unknown.
    /// Returns the keys it had replaced, now blocked (below), in key order.
    @discardableResult
    public func forgetPeer(identity: IdentityPublicKey) throws(StoreError) -> [IdentityPublicKey] {
        let identity = identity.hex
        return try write { db in
            try db.execute(
                sql: "DELETE FROM key_change WHERE old_identity = ? OR new_identity = ?",
                arguments: [identity, identity])
            // The keys it replaced were retired by a person (a lost or stolen device's): with
            // nothing to point at they would be current again, and trusted. They stay refused,
            // as blocked, until a person unblocks one.
            let blocked = try String.fetchAll(
                db, sql: "UPDATE peer SET replaced_by = NULL, trust = 'blocked' WHERE replaced_by = ? RETURNING identity",
                arguments: [identity])
            try db.execute(sql: "DELETE FROM peer WHERE identity = ?", arguments: [identity])
            guard db.changesCount == 1 else { throw StoreError.notFound("peer \(identity)") }
            return try blocked.sorted().map { hex throws in try StoredKey.identity(hex, column: "peer.identity") }
        }
    }

    /// Records contact with a known peer: `lastSeen` moves forward to `at` (never back), and
    /// `lastAddress` becomes `address` when one is given. `.notFound` if unknown.
    public func touchPeer(identity: IdentityPublicKey, at: Int64, address: String?) throws(StoreError) {
        if let address { try InputValidation.requireNoNUL(address, "address") }
        try relaxedWrite { db in
            let update = try db.cachedStatement(
                sql: """
                    UPDATE peer SET last_seen = MAX(last_seen, ?), last_address = COALESCE(?, last_address)
                    WHERE identity = ?
                    """)
            try update.execute(arguments: [at, address, identity.hex])
            guard db.changesCount == 1 else { throw StoreError.notFound("peer \(identity.hex)") }
        }
    }

    // MARK: - Helpers

    static func validate(_ record: PeerRecord) throws(StoreError) {
        try InputValidation.requireNoNUL(record.displayName, "display name")
        try InputValidation.requireNoNUL(record.hostName, "host name")
        if let address = record.lastAddress { try InputValidation.requireNoNUL(address, "address") }
        if let nickname = record.nickname { try InputValidation.requireNoNUL(nickname, "nickname") }
        if let replacedBy = record.replacedBy {
            guard replacedBy != record.identity else {
                throw .invalidArgument("peer \(record.identity.hex) cannot be replaced by itself")
            }
        }
    }

    static func upsertPeer(_ db: Database, _ record: PeerRecord) throws {
        if let replacedBy = record.replacedBy, try peer(db, identity: replacedBy) == nil {
            throw StoreError.conflict(
                "peer \(record.identity.hex) is marked replaced by unknown peer \(replacedBy.hex)")
        }
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO peer (\(peerColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (identity) DO UPDATE SET
                    display_name = excluded.display_name, host_name = excluded.host_name,
                    card = excluded.card, card_sequence = excluded.card_sequence,
                    noise_key = excluded.noise_key, trust = excluded.trust,
                    first_seen = MIN(first_seen, excluded.first_seen), last_seen = excluded.last_seen,
                    last_address = excluded.last_address, replaced_by = excluded.replaced_by,
                    nickname = excluded.nickname
                """)
        try upsert.execute(arguments: [
            record.identity.hex, record.displayName, record.hostName, Data(record.card), record.cardSequence,
            record.noiseKey.hex, record.trust.rawValue, record.firstSeen, record.lastSeen, record.lastAddress,
            record.replacedBy?.hex, record.nickname
        ])
    }

    static func peer(_ db: Database, identity: IdentityPublicKey) throws -> PeerRecord? {
        let statement = try db.cachedStatement(sql: "SELECT \(peerColumns) FROM peer WHERE identity = ?")
        return try fetchPeers(statement, [identity.hex]).first
    }

    static func fetchPeers(_ statement: Statement, _ arguments: StatementArguments) throws -> [PeerRecord] {
        var peers: [PeerRecord] = []
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try rows.next() {
            peers.append(
                PeerRecord(
                    identity: try row.identityKey(0, column: "peer.identity"),
                    displayName: try row.text(1),
                    hostName: try row.text(2),
                    card: try row.bytes(3),
                    cardSequence: try row.int64(4),
                    noiseKey: try row.noiseKey(5, column: "peer.noise_key"),
                    trust: try row.enumeration(TrustState.self, 6, column: "peer.trust"),
                    firstSeen: try row.int64(7),
                    lastSeen: try row.int64(8),
                    lastAddress: try row.optionalText(9),
                    replacedBy: try row.optionalIdentityKey(10, column: "peer.replaced_by"),
                    nickname: try row.optionalText(11)))
        }
        return peers
    }
}
