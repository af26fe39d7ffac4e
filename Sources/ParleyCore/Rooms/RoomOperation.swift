/// A signed change to a room's membership: creating the room, adding a member, removing
/// one (a member removing itself is leaving). Signed by the acting member's identity key
/// over a domain-separated canonical encoding, so any node can check who did what, and
/// a forwarded operation cannot be altered.
///
/// Operations form a graph: each names the operations its author had seen last (its
/// parents, by hash) and carries `sequence = 1 + the highest parent sequence` (create: 1).
/// Who may do what, and how concurrent operations resolve, is `RoomResolver`'s job; this
/// type only guarantees a well-formed, correctly signed operation.
///
/// Every value is valid: the only ways to get one are `sign` (which checks and signs) and
/// `decode` (which checks every field and the signature). Wire format: docs/PROTOCOL.md,
/// "Room operations".
public struct RoomOperation: Hashable, Sendable {
    public static let currentVersion: UInt8 = 1
    /// Prefix of the signed message: a room-operation signature can never be replayed as a
    /// card signature or anything else the identity key signs, nor the reverse.
    static let signatureDomain: [UInt8] = Array("parley-room-op-v1\0".utf8)
    /// Prefix of the hashed bytes, so an operation hash is never the hash of some other
    /// Parley structure with the same bytes.
    static let hashDomain: [UInt8] = Array("parley-room-op-hash-v1\0".utf8)
    public static let signatureLength = 64

    public enum Kind: UInt8, Sendable {
        case create = 1, add = 2, remove = 3
    }

    /// What the operation does.
    public enum Change: Hashable, Sendable {
        /// Founds the room with this name and these members (the creator among them).
        case create(name: String, members: [IdentityPublicKey])
        case add(IdentityPublicKey)
        /// Removing oneself is leaving the room.
        case remove(IdentityPublicKey)

        public var kind: Kind {
            switch self {
            case .create: return .create
            case .add: return .add
            case .remove: return .remove
            }
        }
    }

    /// version, kind, room id, sequence, createdAt, actor, parent count.
    static let fixedLength = 1 + 1 + RoomID.length + 8 + 8 + IdentityPublicKey.length + 1
    /// Name length, name, member count, members.
    static let maxCreateBodyLength = 1 + RoomLimits.maxNameBytes + 2 + RoomLimits.maxMembers * IdentityPublicKey.length
    /// Parents and a target key.
    static let maxChangeBodyLength = RoomLimits.maxParents * RoomOperationHash.length + IdentityPublicKey.length
    /// The largest valid operation (a create with the longest name and most members,
    /// 2,246 bytes): bounds what a receiver parses.
    public static let maxEncodedLength = fixedLength + max(maxCreateBodyLength, maxChangeBodyLength) + signatureLength

    public let roomID: RoomID
    /// 1 for a create; otherwise one more than the highest parent's sequence.
    public let sequence: UInt64
    /// Hashes of the operations this one follows, strictly ascending; empty only for a create.
    public let parents: [RoomOperationHash]
    /// The author's clock, Unix milliseconds. Informational: ordering never uses it.
    public let createdAt: UInt64
    /// The member who made the change and signed it.
    public let actor: IdentityPublicKey
    public let change: Change
    public let signature: [UInt8]
    /// SHA-256 of the domain and the signed bytes: the operation's name.
    public let hash: RoomOperationHash

    private init(roomID: RoomID, sequence: UInt64, parents: [RoomOperationHash], createdAt: UInt64,
                 actor: IdentityPublicKey, change: Change, signature: [UInt8]) {
        self.roomID = roomID
        self.sequence = sequence
        self.parents = parents
        self.createdAt = createdAt
        self.actor = actor
        self.change = change
        self.signature = signature
        let signed = Self.signedBytes(roomID: roomID, sequence: sequence, parents: parents,
                                      createdAt: createdAt, actor: actor, change: change)
        self.hash = RoomOperationHash(exactly: Sodium.sha256(Self.hashDomain, signed))
    }

    public var kind: Kind { change.kind }

    /// The member an add or remove is about; nil for a create.
    public var target: IdentityPublicKey? {
        switch change {
        case .create: return nil
        case .add(let k), .remove(let k): return k
        }
    }

    // MARK: Building

    /// Signs a create operation for a new room. `members` may or may not include the
    /// creator; it is added, sorted and de-duplicated here.
    public static func create(roomID: RoomID, name: String, members: [IdentityPublicKey],
                              by identity: IdentityKeyPair, createdAt: UInt64) throws(RoomOperationError) -> RoomOperation {
        let all = Array(Set(members + [identity.publicKey])).sorted()
        return try sign(.create(name: name, members: all), roomID: roomID, parents: [], by: identity, createdAt: createdAt)
    }

    /// Signs an add or remove following `parents` (the room's current heads; see
    /// `RoomState.heads`). The sequence is derived from them.
    public static func change(_ change: Change, roomID: RoomID, after parents: [RoomOperation],
                              by identity: IdentityKeyPair, createdAt: UInt64) throws(RoomOperationError) -> RoomOperation {
        try sign(change, roomID: roomID, parents: parents, by: identity, createdAt: createdAt)
    }

    private static func sign(_ change: Change, roomID: RoomID, parents: [RoomOperation],
                             by identity: IdentityKeyPair, createdAt: UInt64) throws(RoomOperationError) -> RoomOperation {
        let hashes = Array(Set(parents.map(\.hash))).sorted()
        let sequence: UInt64
        if case .create = change {
            sequence = 1
        } else {
            // Parents come from valid operations, whose sequences are bounded by what a
            // room can hold; saturate anyway rather than trap.
            let top = parents.map(\.sequence).max() ?? 0
            sequence = top == UInt64.max ? top : top + 1
        }
        let actor = identity.publicKey
        try validate(change: change, actor: actor, parents: hashes, sequence: sequence)
        let signed = signedBytes(roomID: roomID, sequence: sequence, parents: hashes,
                                 createdAt: createdAt, actor: actor, change: change)
        let signature = identity.sign(signatureDomain + signed)
        return RoomOperation(roomID: roomID, sequence: sequence, parents: hashes, createdAt: createdAt,
                             actor: actor, change: change, signature: signature)
    }

    /// The structural rules shared by `sign` and `decode`.
    private static func validate(change: Change, actor: IdentityPublicKey, parents: [RoomOperationHash],
                                 sequence: UInt64) throws(RoomOperationError) {
        for (a, b) in zip(parents, parents.dropFirst()) where !(a < b) {
            throw .invalidParents("parent hashes must be strictly ascending")
        }
        switch change {
        case let .create(name, members):
            guard parents.isEmpty else { throw .invalidParents("a create has no parents") }
            guard sequence == 1 else { throw .invalidSequence(sequence) }
            do { _ = try CardFieldRules.displayName(utf8: Array(name.utf8)) } catch {
                throw .invalidName(error.description)
            }
            guard !members.isEmpty, members.count <= RoomLimits.maxMembers else {
                throw .invalidMembers("\(members.count) members; a room has 1 to \(RoomLimits.maxMembers)")
            }
            for (a, b) in zip(members, members.dropFirst()) where !(a < b) {
                throw .invalidMembers("members must be strictly ascending (no duplicates)")
            }
            guard members.contains(actor) else { throw .invalidMembers("the creator is not a member") }
        case .add, .remove:
            guard !parents.isEmpty else { throw .invalidParents("an add or remove follows at least one operation") }
            guard parents.count <= RoomLimits.maxParents else {
                throw .invalidParents("\(parents.count) parents exceed \(RoomLimits.maxParents)")
            }
            guard sequence >= 2 else { throw .invalidSequence(sequence) }
        }
    }

    // MARK: Encoding

    static func signedBytes(roomID: RoomID, sequence: UInt64, parents: [RoomOperationHash], createdAt: UInt64,
                            actor: IdentityPublicKey, change: Change) -> [UInt8] {
        var out: [UInt8] = [currentVersion, change.kind.rawValue]
        out.reserveCapacity(maxEncodedLength)
        out += roomID.bytes
        out.appendUInt64(sequence)
        out.appendUInt64(createdAt)
        out += actor.bytes
        // Bounded by maxParents (16) when built or decoded: fits a byte.
        out.append(UInt8(parents.count))
        for p in parents { out += p.bytes }
        switch change {
        case let .create(name, members):
            let n = Array(name.utf8)
            out.append(UInt8(n.count))   // at most 64, checked
            out += n
            out.appendUInt16(UInt16(members.count))  // at most 64, checked
            for m in members { out += m.bytes }
        case .add(let k), .remove(let k):
            out += k.bytes
        }
        return out
    }

    /// The canonical wire form: signed bytes, then the signature.
    public func encoded() -> [UInt8] {
        Self.signedBytes(roomID: roomID, sequence: sequence, parents: parents, createdAt: createdAt,
                         actor: actor, change: change) + signature
    }

    /// Parses and verifies one operation: exactly these bytes, a valid structure and a
    /// signature by `actor`.
    public static func decode(_ bytes: [UInt8]) throws(RoomOperationError) -> RoomOperation {
        guard bytes.count <= maxEncodedLength else { throw .tooLarge(bytes.count) }
        var r = ByteReader(bytes)
        func take(_ n: Int, _ field: String) throws(RoomOperationError) -> [UInt8] {
            do { return try r.readBytes(n) } catch { throw .truncated(field: field) }
        }
        func u64(_ field: String) throws(RoomOperationError) -> UInt64 {
            try take(8, field).reduce(UInt64(0)) { ($0 << 8) | UInt64($1) }
        }
        func key(_ field: String) throws(RoomOperationError) -> IdentityPublicKey {
            let bytes = try take(IdentityPublicKey.length, field)
            // Force-try safe: `take` returned exactly the key length, the only thing checked.
            return try! IdentityPublicKey(bytes: bytes)
        }
        let version = try take(1, "version")[0]
        guard version == currentVersion else { throw .unsupportedVersion(version) }
        let rawKind = try take(1, "kind")[0]
        guard let kind = Kind(rawValue: rawKind) else { throw .unknownKind(rawKind) }
        let roomID = RoomID(exactly: try take(RoomID.length, "room id"))
        let sequence = try u64("sequence")
        let createdAt = try u64("created-at")
        let actor = try key("actor")
        let parentCount = Int(try take(1, "parent count")[0])
        guard parentCount <= RoomLimits.maxParents else {
            throw .invalidParents("\(parentCount) parents exceed \(RoomLimits.maxParents)")
        }
        var parents: [RoomOperationHash] = []
        for _ in 0..<parentCount {
            parents.append(RoomOperationHash(exactly: try take(RoomOperationHash.length, "parent")))
        }
        let change: Change
        switch kind {
        case .create:
            let nameLength = Int(try take(1, "name length")[0])
            let nameBytes = try take(nameLength, "name")
            let name: String
            do { name = try CardFieldRules.displayName(utf8: nameBytes) } catch { throw .invalidName(error.description) }
            let countBytes = try take(2, "member count")
            let count = Int(countBytes[0]) << 8 | Int(countBytes[1])
            guard count <= RoomLimits.maxMembers else {
                throw .invalidMembers("\(count) members; a room has 1 to \(RoomLimits.maxMembers)")
            }
            var members: [IdentityPublicKey] = []
            for _ in 0..<count {
                members.append(try key("member"))
            }
            change = .create(name: name, members: members)
        case .add, .remove:
            let target = try key("target")
            change = kind == .add ? .add(target) : .remove(target)
        }
        try validate(change: change, actor: actor, parents: parents, sequence: sequence)
        let signedEnd = r.offset
        let signature = try take(signatureLength, "signature")
        guard r.isAtEnd else { throw .trailingBytes(count: r.remaining) }
        guard actor.verify(signature: signature, message: signatureDomain + bytes[..<signedEnd]) else {
            throw .badSignature
        }
        return RoomOperation(roomID: roomID, sequence: sequence, parents: parents, createdAt: createdAt,
                             actor: actor, change: change, signature: signature)
    }
}
