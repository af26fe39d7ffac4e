import Foundation
import GRDB
import ParleyCore

/// The `party` table (`lean-messages-v1`): every identity key and room id a message names,
/// stored once; messages refer to a party by its integer id. These helpers turn keys into
/// ids inside a transaction; ids never leave the store.
extension Store {
    /// SQL for the party id of the key bound at this `?` as a BLOB (`keyBlob`; NULL when
    /// no message names it): for the queries that take a typed key.
    static let partyOfKeyParameter = "(SELECT id FROM party WHERE key = ?)"

    /// A typed key or id as the BLOB the `party` and `message` tables hold.
    static func keyBlob(_ key: IdentityPublicKey) -> Data { Data(key.bytes) }
    static func keyBlob(_ party: MessageParty) -> Data { Data(party.bytes) }
    static func keyBlob<ID: FixedLengthID>(_ id: ID) -> Data { Data(id.bytes) }

    /// A message id as the BLOB `message.id` holds.
    static func idBlob(_ id: MessageID) -> Data { Data(id.bytes) }

    /// The id of `key`, nil if no message names it yet.
    static func partyID(_ db: Database, key: [UInt8]) throws -> Int64? {
        let select = try db.cachedStatement(sql: "SELECT id FROM party WHERE key = ?")
        var id: Int64?
        try select.queryDirect([.blob(key)]) { row in id = row.int64(0) }
        return id
    }

    /// The id of `key`, added if new (same transaction).
    static func ensureParty(_ db: Database, key: [UInt8]) throws -> Int64 {
        if let id = try partyID(db, key: key) { return id }
        let insert = try db.cachedStatement(sql: "INSERT INTO party (key) VALUES (?)")
        try insert.executeDirect([.blob(key)])
        return db.lastInsertedRowID
    }

    /// Most party ids `partyIDs` keeps: a node talks with tens of peers and rooms, and a
    /// flood of new keys only empties it (each lookup then costs one index probe again).
    static let partyIDCacheLimit = 4096

    /// `ensureParty` through `partyIDs`: the message path resolves the same few keys in
    /// every transaction, and one message in flight is one transaction (~3,000 instructions
    /// per probe in callgrind). Only ids found by a lookup are kept, never one inserted by
    /// this transaction (it may still roll back; a failed write also empties the cache).
    /// Inside a write, under `lock`.
    func party(_ db: Database, key: [UInt8]) throws -> Int64 {
        if let id = partyIDs[PartyKey(key)] { return id }
        if let id = try Self.partyID(db, key: key) {
            rememberParty(key, id)
            return id
        }
        return try Self.ensureParty(db, key: key)
    }

    /// `partyID(_:key:)` through `partyIDs` (nil: no message names the key yet).
    func knownParty(_ db: Database, key: [UInt8]) throws -> Int64? {
        if let id = partyIDs[PartyKey(key)] { return id }
        guard let id = try Self.partyID(db, key: key) else { return nil }
        rememberParty(key, id)
        return id
    }

    private func rememberParty(_ key: [UInt8], _ id: Int64) {
        if partyIDs.count >= Self.partyIDCacheLimit { partyIDs.removeAll() }
        partyIDs[PartyKey(key)] = id
    }

    /// A message id prefix filled up to 32 digits by the caller (`messages(idPrefix:)`: text
    /// a person typed), as the BLOB the table holds; nil if malformed (it matches nothing).
    static func idBlob(_ hex: String) -> Data? {
        Sodium.fromHex(hex).map { Data($0) }
    }
}

/// A party's key (an identity key or a room id) as `Store.partyIDs` keys it: hashed as one
/// buffer. `[UInt8]`'s own `Hashable` feeds the hasher a byte at a time, ~1,100
/// instructions a lookup for a 32-byte key, and the message path looks up two parties per
/// received message (issue 32 part 11). Equal keys have equal bytes, so they hash alike.
struct PartyKey: Hashable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func hash(into hasher: inout Hasher) {
        hasher.combine(bytes.count)
        hashFixedLengthBytes(bytes, into: &hasher)
    }
}

/// `message.state` as stored.
extension MessageState {
    var code: Int64 {
        switch self {
        case .queued: 0
        case .delivered: 1
        case .received: 2
        }
    }

    init?(code: Int64) {
        switch code {
        case 0: self = .queued
        case 1: self = .delivered
        case 2: self = .received
        default: return nil
        }
    }
}
