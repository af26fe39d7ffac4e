/// A signed change to a room: creating it, inviting (adding) a member, removing one (a
/// member removing itself is leaving, or declining an invitation), joining (an invited
/// member accepting), changing a member's role, renaming the room, setting its policy.
/// Signed by the acting member's identity key over a domain-separated canonical encoding,
/// so any node can check who did what, and a forwarded operation cannot be altered.
///
/// Operations form a graph: each names the operations its author had seen last (its
/// parents, by hash) and carries `sequence = 1 + the highest parent sequence` (create: 1).
/// The room id is the first 16 bytes of the create's hash, so it commits to the signed
/// create and no other create can claim it. Who may do what, and how concurrent
/// operations resolve, is `RoomResolver`'s job; this type only guarantees a well-formed,
/// correctly signed operation.
///
/// Every value is valid: the only ways to get one are `sign` (which checks and signs) and
/// `decode` (which checks every field and the signature). Wire format: docs/PROTOCOL.md,
/// "Room operations" (version 2).
public struct RoomOperation: Hashable, Sendable {
    /// Version 2: roles, invitations (join), rename, policy; the room id commits to the
    /// create. Version 1 operations are refused (docs/PROTOCOL.md, "Migration").
    public static let currentVersion: UInt8 = 2
    /// Prefix of the signed message: a room-operation signature can never be replayed as a
    /// card signature or anything else the identity key signs, nor the reverse (nor as a
    /// version-1 operation).
    static let signatureDomain: [UInt8] = Array("parley-room-op-v2\0".utf8)
    /// Prefix of the hashed bytes, so an operation hash is never the hash of some other
    /// Parley structure with the same bytes.
    static let hashDomain: [UInt8] = Array("parley-room-op-hash-v2\0".utf8)
    public static let signatureLength = 64

    public enum Kind: UInt8, Sendable {
        case create = 1, add = 2, remove = 3, setRole = 4, rename = 5, setPolicy = 6, join = 7
    }

    /// The room's settings, carried by create and changed by setPolicy.
    public struct Policy: Hashable, Sendable {
        /// Only admins and owners may add (invite) members; otherwise any joined member may.
        public var onlyAdminsAdd: Bool
        /// History is shared with new members (issue 30): a message written while this is
        /// on goes to every member joined now, also those who joined after it was written
        /// (Matrix's `shared`). Off (the default, as in Signal and Matrix's `joined`): a
        /// member gets only what was written while it was a joined member.
        public var sharedHistory: Bool

        public init(onlyAdminsAdd: Bool = false, sharedHistory: Bool = false) {
            self.onlyAdminsAdd = onlyAdminsAdd
            self.sharedHistory = sharedHistory
        }

        /// bit 0: onlyAdminsAdd; bit 1: sharedHistory; the other bits are reserved and must be 0.
        public var flags: UInt8 { (onlyAdminsAdd ? 1 : 0) | (sharedHistory ? 2 : 0) }

        init?(flags: UInt8) {
            guard flags & ~3 == 0 else { return nil }
            onlyAdminsAdd = flags & 1 != 0
            sharedHistory = flags & 2 != 0
        }
    }

    /// What the operation does.
    public enum Change: Hashable, Sendable {
        /// Founds the room with this name, policy and invited members (the creator among
        /// them, as its owner and first joined member).
        case create(name: String, members: [IdentityPublicKey], policy: Policy)
        /// Invites a key: it becomes a member (role member) that has not joined yet.
        case add(IdentityPublicKey)
        /// Removing oneself is leaving (or declining an invitation).
        case remove(IdentityPublicKey)
        case setRole(IdentityPublicKey, RoomRole)
        case rename(String)
        case setPolicy(Policy)
        /// The actor, an invited member, accepts: from now on it receives room messages.
        case join

        public var kind: Kind {
            switch self {
            case .create: return .create
            case .add: return .add
            case .remove: return .remove
            case .setRole: return .setRole
            case .rename: return .rename
            case .setPolicy: return .setPolicy
            case .join: return .join
            }
        }
    }

    /// version, kind, room field, sequence, createdAt, actor, parent count.
    static let fixedLength = 1 + 1 + RoomID.length + 8 + 8 + IdentityPublicKey.length + 1
    /// Name length, name, flags, member count, members.
    static let maxCreateBodyLength =
        1 + RoomLimits.maxNameBytes + 1 + 2 + RoomLimits.maxCreateMembers * IdentityPublicKey.length
    /// Parents and the largest change body (a rename: length and name).
    static let maxChangeBodyLength =
        RoomLimits.maxParents * RoomOperationHash.length
        + max(IdentityPublicKey.length + 1, 1 + RoomLimits.maxNameBytes)
    /// The largest valid operation (a create with the longest name and most members,
    /// 2,247 bytes): bounds what a receiver parses.
    public static let maxEncodedLength = fixedLength + max(maxCreateBodyLength, maxChangeBodyLength) + signatureLength

    /// The room: for a create, the first 16 bytes of its own hash; for every other
    /// operation, the 16-byte room field, which must name the create's hash that way.
    public let roomID: RoomID
    /// The 16 bytes on the wire at the room field: a create's random nonce (so two creates
    /// by the same member with the same name and members get different ids), the room id
    /// otherwise.
    public let roomField: RoomID
    /// 1 for a create; otherwise one more than the highest parent's sequence.
    public let sequence: UInt64
    /// Hashes of the operations this one follows, strictly ascending; empty only for a create.
    public let parents: [RoomOperationHash]
    /// The author's clock, Unix milliseconds. Informational: ordering never uses it.
    public let createdAt: UInt64
    /// The member who made the change and signed it.
    public let actor: IdentityPublicKey
    public let change: Change
    /// A remove's **cap** (features bit 7, `ProtocolFeatures.removalCaps`): the highest
    /// `roomSequence` of the target's signed room messages that the remover had accepted
    /// (for a leave, the leaver's own last). Members refuse the target's messages above it
    /// unless written after the removal (`RoomRemovalCaps`), so a removed member cannot
    /// go on writing with a back-dated anchor. Nil: a remove without a cap (from a node
    /// without bit 7, or one signed while a member was not known to have it): no limit,
    /// the behaviour before the cap. Always nil for the other kinds.
    public let removalCap: UInt64?
    public let signature: [UInt8]
    /// SHA-256 of the domain and the signed bytes: the operation's name.
    public let hash: RoomOperationHash

    private init(
        roomField: RoomID, sequence: UInt64, parents: [RoomOperationHash], createdAt: UInt64,
        actor: IdentityPublicKey, change: Change, removalCap: UInt64?, signature: [UInt8]
    ) {
        self.roomField = roomField
        self.sequence = sequence
        self.parents = parents
        self.createdAt = createdAt
        self.actor = actor
        self.change = change
        self.removalCap = removalCap
        self.signature = signature
        let signed = Self.signedBytes(
            roomField: roomField, sequence: sequence, parents: parents,
            createdAt: createdAt, actor: actor, change: change, removalCap: removalCap)
        let hash = RoomOperationHash(exactly: Sodium.sha256(Self.hashDomain, signed))
        self.hash = hash
        if case .create = change { roomID = RoomID(committingTo: hash) } else { roomID = roomField }
    }

    public var kind: Kind { change.kind }

    /// The member an add, remove or setRole is about (a join: its actor); nil otherwise.
    public var target: IdentityPublicKey? {
        switch change {
        case .create, .rename, .setPolicy: return nil
        case .add(let k), .remove(let k), .setRole(let k, _): return k
        case .join: return actor
        }
    }

    // MARK: Building

    /// Signs a create operation for a new room. `members` may or may not include the
    /// creator; it is added, sorted and de-duplicated here. The room id is derived from the
    /// result (`roomID`); `nonce` is random unless a test fixes it.
    public static func create(
        name: String, members: [IdentityPublicKey], policy: Policy = Policy(),
        by identity: IdentityKeyPair, createdAt: UInt64,
        nonce: RoomID = .random()
    ) throws(RoomOperationError) -> RoomOperation {
        let all = Array(Set(members + [identity.publicKey])).sorted()
        return try sign(
            .create(name: name, members: all, policy: policy), roomField: nonce, parents: [],
            by: identity, createdAt: createdAt, removalCap: nil)
    }

    /// Signs any other change following `parents` (the room's current heads; see
    /// `RoomState.heads`). The sequence is derived from them. `removalCap`: a remove's cap
    /// (nil: none); any other kind with a cap is refused.
    public static func change(
        _ change: Change, roomID: RoomID, after parents: [RoomOperation],
        by identity: IdentityKeyPair, createdAt: UInt64, removalCap: UInt64? = nil
    ) throws(RoomOperationError) -> RoomOperation {
        if case .create = change { throw .invalidParents("a create has no parents; use RoomOperation.create") }
        return try sign(
            change, roomField: roomID, parents: parents, by: identity, createdAt: createdAt, removalCap: removalCap)
    }

    private static func sign(
        _ change: Change, roomField: RoomID, parents: [RoomOperation],
        by identity: IdentityKeyPair, createdAt: UInt64, removalCap: UInt64?
    ) throws(RoomOperationError) -> RoomOperation {
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
        if removalCap != nil, change.kind != .remove {
            throw .capOnNonRemove
        }
        try validate(change: change, actor: actor, parents: hashes, sequence: sequence)
        let signed = signedBytes(
            roomField: roomField, sequence: sequence, parents: hashes,
            createdAt: createdAt, actor: actor, change: change, removalCap: removalCap)
        let signature = identity.sign(signatureDomain + signed)
        return RoomOperation(
            roomField: roomField, sequence: sequence, parents: hashes, createdAt: createdAt,
            actor: actor, change: change, removalCap: removalCap, signature: signature)
    }

    /// The structural rules shared by `sign` and `decode`.
    private static func validate(
        change: Change, actor: IdentityPublicKey, parents: [RoomOperationHash],
        sequence: UInt64
    ) throws(RoomOperationError) {
        for (a, b) in zip(parents, parents.dropFirst()) where !(a < b) {
            throw .invalidParents("parent hashes must be strictly ascending")
        }
        switch change {
        case let .create(name, members, _):
            guard parents.isEmpty else { throw .invalidParents("a create has no parents") }
            guard sequence == 1 else { throw .invalidSequence(sequence) }
            try validateName(name)
            guard !members.isEmpty, members.count <= RoomLimits.maxCreateMembers else {
                throw .invalidMembers(
                    "\(members.count) members; a create lists 1 to \(RoomLimits.maxCreateMembers) (add the others)")
            }
            for (a, b) in zip(members, members.dropFirst()) where !(a < b) {
                throw .invalidMembers("members must be strictly ascending (no duplicates)")
            }
            guard members.contains(actor) else { throw .invalidMembers("the creator is not a member") }
        case .add, .remove, .setRole, .rename, .setPolicy, .join:
            guard !parents.isEmpty else { throw .invalidParents("only a create has no parents") }
            guard parents.count <= RoomLimits.maxParents else {
                throw .invalidParents("\(parents.count) parents exceed \(RoomLimits.maxParents)")
            }
            guard sequence >= 2 else { throw .invalidSequence(sequence) }
            if case .rename(let name) = change { try validateName(name) }
        }
    }

    private static func validateName(_ name: String) throws(RoomOperationError) {
        do { _ = try CardFieldRules.displayName(utf8: Array(name.utf8)) } catch {
            throw .invalidName(error.description)
        }
    }

    // MARK: Encoding

    static func signedBytes(
        roomField: RoomID, sequence: UInt64, parents: [RoomOperationHash], createdAt: UInt64,
        actor: IdentityPublicKey, change: Change, removalCap: UInt64?
    ) -> [UInt8] {
        var out: [UInt8] = [currentVersion, change.kind.rawValue]
        out.reserveCapacity(maxEncodedLength)
        out += roomField.bytes
        out.appendUInt64(sequence)
        out.appendUInt64(createdAt)
        out += actor.bytes
        // Bounded by maxParents (16) when built or decoded: fits a byte.
        out.append(UInt8(parents.count))
        for p in parents { out += p.bytes }
        switch change {
        case let .create(name, members, policy):
            let n = Array(name.utf8)
            out.append(UInt8(n.count))  // at most 64, checked
            out += n
            out.append(policy.flags)
            out.appendUInt16(UInt16(members.count))  // at most maxCreateMembers, checked
            for m in members { out += m.bytes }
        case .add(let k):
            out += k.bytes
        case .remove(let k):
            out += k.bytes
            // The cap follows the target when there is one (bit 7): a decoder tells the two
            // forms apart by the length left before the signature.
            if let removalCap { out.appendUInt64(removalCap) }
        case let .setRole(k, role):
            out += k.bytes
            out.append(role.rawValue)
        case .rename(let name):
            let n = Array(name.utf8)
            out.append(UInt8(n.count))
            out += n
        case .setPolicy(let policy):
            out.append(policy.flags)
        case .join:
            break
        }
        return out
    }

    /// The canonical wire form: signed bytes, then the signature.
    public func encoded() -> [UInt8] {
        Self.signedBytes(
            roomField: roomField, sequence: sequence, parents: parents, createdAt: createdAt,
            actor: actor, change: change, removalCap: removalCap) + signature
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
        func name() throws(RoomOperationError) -> String {
            let nameLength = Int(try take(1, "name length")[0])
            let nameBytes = try take(nameLength, "name")
            do { return try CardFieldRules.displayName(utf8: nameBytes) } catch {
                throw .invalidName(error.description)
            }
        }
        func policy() throws(RoomOperationError) -> Policy {
            let flags = try take(1, "flags")[0]
            guard let p = Policy(flags: flags) else { throw .invalidPolicy(flags) }
            return p
        }
        let version = try take(1, "version")[0]
        guard version == currentVersion else { throw .unsupportedVersion(version) }
        let rawKind = try take(1, "kind")[0]
        guard let kind = Kind(rawValue: rawKind) else { throw .unknownKind(rawKind) }
        let roomField = RoomID(exactly: try take(RoomID.length, "room"))
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
        var removalCap: UInt64?
        switch kind {
        case .create:
            let n = try name()
            let p = try policy()
            let countBytes = try take(2, "member count")
            let count = Int(countBytes[0]) << 8 | Int(countBytes[1])
            guard count <= RoomLimits.maxCreateMembers else {
                throw .invalidMembers(
                    "\(count) members; a create lists 1 to \(RoomLimits.maxCreateMembers) (add the others)")
            }
            var members: [IdentityPublicKey] = []
            for _ in 0..<count {
                members.append(try key("member"))
            }
            change = .create(name: n, members: members, policy: p)
        case .add:
            change = .add(try key("target"))
        case .remove:
            change = .remove(try key("target"))
            // Bit 7: exactly 8 bytes more than the signature left means a cap; anything
            // else is the signature (and trailing bytes are refused below).
            if r.remaining == signatureLength + 8 { removalCap = try u64("cap") }
        case .setRole:
            let target = try key("target")
            let raw = try take(1, "role")[0]
            guard let role = RoomRole(rawValue: raw) else { throw .unknownRole(raw) }
            change = .setRole(target, role)
        case .rename:
            change = .rename(try name())
        case .setPolicy:
            change = .setPolicy(try policy())
        case .join:
            change = .join
        }
        try validate(change: change, actor: actor, parents: parents, sequence: sequence)
        let signedEnd = r.offset
        let signature = try take(signatureLength, "signature")
        guard r.isAtEnd else { throw .trailingBytes(count: r.remaining) }
        guard actor.verify(signature: signature, message: signatureDomain + bytes[..<signedEnd]) else {
            throw .badSignature
        }
        return RoomOperation(
            roomField: roomField, sequence: sequence, parents: parents, createdAt: createdAt,
            actor: actor, change: change, removalCap: removalCap, signature: signature)
    }
}
