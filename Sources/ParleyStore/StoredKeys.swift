import GRDB
import ParleyCore

/// The one place the store turns its typed keys back from their stored form. The peer,
/// key-change, address, file-transfer and room tables keep identities, room ids, transfer
/// ids and operation hashes as lowercase hex TEXT (their schema predates the typed API and
/// is unchanged); the public API takes and returns `IdentityPublicKey`, `RoomID`,
/// `TransferID` and `RoomOperationHash`, so a caller can no longer hand the store malformed
/// hex. Writing binds `.hex` (always lowercase, always the right length); reading parses,
/// and a value that does not parse is a damaged file (`StoreError.corrupt`), never a trap.
extension Row {
    func identityKey(_ index: Int, column: String) throws -> IdentityPublicKey {
        try StoredKey.identity(try text(index), column: column)
    }

    func optionalIdentityKey(_ index: Int, column: String) throws -> IdentityPublicKey? {
        try optionalText(index).map { hex throws in try StoredKey.identity(hex, column: column) }
    }

    func noiseKey(_ index: Int, column: String) throws -> NoisePublicKey {
        try StoredKey.noise(try text(index), column: column)
    }

    func fixedLengthID<ID: FixedLengthID>(_ type: ID.Type, _ index: Int, column: String) throws -> ID {
        try StoredKey.id(type, try text(index), column: column)
    }

    func party(_ index: Int, column: String) throws -> MessageParty {
        try StoredKey.party(try text(index), column: column)
    }

    func optionalFixedLengthID<ID: FixedLengthID>(_ type: ID.Type, _ index: Int, column: String) throws -> ID? {
        try optionalText(index).map { hex throws in try StoredKey.id(type, hex, column: column) }
    }
}

/// The same for the BLOB columns of the lean message schema (`party.key`, `message.id`):
/// a BLOB of the wrong length is a damaged file (`StoreError.corrupt`).
extension Row {
    func identityKeyBlob(_ index: Int, column: String) throws -> IdentityPublicKey {
        let bytes = try self.bytes(index)
        guard bytes.count == IdentityPublicKey.length, let key = try? IdentityPublicKey(bytes: bytes) else {
            throw UnexpectedStoredValue(column: column, value: "\(bytes.count) bytes")
        }
        return key
    }

    func idBlob<ID: FixedLengthID>(_ type: ID.Type, _ index: Int, column: String) throws -> ID {
        let bytes = try self.bytes(index)
        guard let id = ID(bytes: bytes) else {
            throw UnexpectedStoredValue(column: column, value: "\(bytes.count) bytes")
        }
        return id
    }
}

/// Parsing a stored hex key. Lowercase only: that is all the store writes, and a key read
/// back in another spelling would not match its own row when bound again as `.hex`.
enum StoredKey {
    static func identity(_ hex: String, column: String) throws -> IdentityPublicKey {
        guard isLowercaseHex(hex, length: IdentityPublicKey.length), let bytes = Sodium.fromHex(hex),
            let key = try? IdentityPublicKey(bytes: bytes)
        else { throw UnexpectedStoredValue(column: column, value: hex) }
        return key
    }

    static func noise(_ hex: String, column: String) throws -> NoisePublicKey {
        guard isLowercaseHex(hex, length: NoisePublicKey.length), let bytes = Sodium.fromHex(hex),
            let key = try? NoisePublicKey(bytes: bytes)
        else { throw UnexpectedStoredValue(column: column, value: hex) }
        return key
    }

    static func id<ID: FixedLengthID>(_ type: ID.Type, _ hex: String, column: String) throws -> ID {
        guard isLowercaseHex(hex, length: ID.length), let id = ID(hex: hex) else {
            throw UnexpectedStoredValue(column: column, value: hex)
        }
        return id
    }

    /// A conversation named in hex (`message_action.peer`): a peer's key (64 digits) or a
    /// room id (32).
    static func party(_ hex: String, column: String) throws -> MessageParty {
        if hex.utf8.count == 2 * IdentityPublicKey.length { return .peer(try identity(hex, column: column)) }
        return .room(try id(RoomID.self, hex, column: column))
    }

    static func isLowercaseHex(_ hex: String, length: Int) -> Bool {
        hex.utf8.count == 2 * length
            && hex.utf8.allSatisfy {
                ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                    || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f"))
            }
    }
}
