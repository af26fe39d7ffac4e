/// Why the resolver did not apply an operation. `waiting` operations (a parent not held)
/// can still join the graph; the structural and authority verdicts (`otherRoom` through
/// `roomFull`) depend only on the operation's own past and are final; `removedConcurrently`
/// and `overruled` depend on concurrent operations and can appear when more arrive.
public enum RoomOperationRejection: String, Sendable, Equatable {
    /// The operation names another room.
    case otherRoom
    /// A create other than the room's (the room id is the create's hash: only one fits).
    case secondCreate
    /// Its sequence is not one more than its highest parent's.
    case badSequence
    /// One of its ancestors was rejected for one of the reasons above, so it does not
    /// belong to this room's graph.
    case rejectedAncestor
    /// Its actor was not a joined member in the state of its causal past (a join: not
    /// invited; a leave: not a member).
    case notMember
    /// Its actor's role did not allow it in the state of its causal past (a member
    /// removing someone, an admin acting on an admin, adding in an "only admins may add"
    /// room, granting a role above its own).
    case notPermitted
    /// It changes nothing in the state of its past (adding a member, removing a
    /// non-member, the same role, name or policy, joining twice). Refused so that nobody
    /// can fill a room's operation limit with no-ops.
    case noEffect
    /// An add to a room that already has `RoomLimits.maxMembers` members.
    case roomFull
    /// A valid removal or demotion of its actor (by someone who outranked it, or the
    /// actor's own leaving or stepping down), concurrent with it, voids it ("removal
    /// sticks").
    case removedConcurrently
    /// An add of a key that a concurrent valid removal, by an equal or higher rank, took
    /// out.
    case overruled
}

/// What a room looks like after resolving a set of operations: the same on every node that
/// holds the same operations, whatever order they arrived in.
public struct RoomState: Equatable, Sendable {
    public let roomID: RoomID
    public let name: String
    public let policy: RoomOperation.Policy
    public let creator: IdentityPublicKey
    /// The creator's clock at creation, Unix milliseconds (informational).
    public let createdAt: UInt64
    /// Hash of the create operation the room grows from.
    public let root: RoomOperationHash
    /// Current members, joined or invited, ascending.
    public let members: [IdentityPublicKey]
    /// Each member's role.
    public let roles: [IdentityPublicKey: RoomRole]
    /// Members that joined (accepted their invitation; the creator from the start),
    /// ascending. Only they send and receive room messages.
    public let joined: [IdentityPublicKey]
    /// Highest sequence among applied operations: grows with every change.
    public let version: UInt64
    /// Applied operations, in resolution order.
    public let applied: [RoomOperationHash]
    /// Operations in the graph that were not applied, and why.
    public let rejected: [RoomOperationHash: RoomOperationRejection]
    /// Operations whose ancestors have not all arrived yet.
    public let waiting: [RoomOperationHash]
    /// The applied operations no other applied operation follows, highest (sequence, hash)
    /// first, at most `RoomLimits.maxParents`: the parents of this node's next operation.
    public let heads: [RoomOperation]

    /// A member, joined or invited.
    public func isMember(_ identity: IdentityPublicKey) -> Bool { roles[identity] != nil }

    public func hasJoined(_ identity: IdentityPublicKey) -> Bool { joined.contains(identity) }

    /// Invited, not joined yet.
    public func isInvited(_ identity: IdentityPublicKey) -> Bool { isMember(identity) && !hasJoined(identity) }

    public func role(of identity: IdentityPublicKey) -> RoomRole? { roles[identity] }
}

/// The convergence rule for room membership (docs/PROTOCOL.md, "Who may do what, and
/// convergence"). Pure: the same operations give the same state on every node.
///
/// 1. **Graph.** Starting from the create (`root`), an operation belongs to the graph when
///    all its parents do and its sequence is one more than the highest parent's.
///    Operations are taken in **(sequence, hash)** order, a topological order of the graph.
/// 2. **Causal past.** The past of an operation is the set of its ancestors: exactly the
///    operations its author had seen when it signed.
/// 3. **Authority.** An operation is permitted if the state of the valid operations of its
///    past allows it (`RoomAuthority`): roles, rank (an actor acts only on members ranked
///    strictly below it), the room's policy, and it must change something.
/// 4. **Threats.** A *lowering* is an *authorised* (rule 3 applied to authorised
///    operations only, so nothing is circular) removal or demotion, of another member or of
///    its own actor (leaving, stepping down). A lowering L threatens an operation O
///    concurrent with it when L lowers O's actor (removal sticks) and, for a lowering of
///    another, L's actor had not seen O; or when O adds the key another's removal L takes
///    out and L's actor, of equal or higher rank than the adder, had not seen O
///    (conflicting add).
/// 5. **Decision order.** Operations are decided one at a time: an operation is decided
///    after its parents and after the lowerings that threaten it, lowest (sequence, hash)
///    first; when every operation left waits for a threat that waits in turn (a cycle
///    through a causal edge), the one whose parents are decided and whose strongest
///    undecided threat ranks lowest goes first, ignoring that threat. An operation is valid when permitted (3) and no *valid* lowering decided
///    before it threatens it. So only a valid lowering voids anything: a void removal (a
///    demoted admin's, back-dated) voids nothing, and it cannot keep its target out for
///    good (honest operations never have it in their past, so they would stay concurrent
///    with it forever).
/// 6. **State.** The valid operations in (sequence, hash) order, folded (`RoomFold`).
public enum RoomResolver {
    /// Resolves `operations` (any order, duplicates and foreign operations allowed) into the
    /// room founded by `root`. Returns nil if `root` is not a create.
    public static func resolve(root: RoomOperation, operations: [RoomOperation]) -> RoomState? {
        var work = 0
        return resolve(root: root, operations: operations, work: &work)
    }

    /// The same, adding to `work` the elementary steps it took (the unit
    /// `RoomResolution.work` counts too: an operation folded or examined, a bit-set word):
    /// the full replay kept as the reference `RoomResolution` is tested and benched against.
    public static func resolve(root: RoomOperation, operations: [RoomOperation], work: inout Int) -> RoomState? {
        guard case .create = root.change else { return nil }
        var rejected: [RoomOperationHash: RoomOperationRejection] = [:]
        var byHash: [RoomOperationHash: RoomOperation] = [root.hash: root]
        for op in operations {
            if op.roomID != root.roomID {
                rejected[op.hash] = .otherRoom
                continue
            }
            byHash[op.hash] = op
        }
        let ordered = byHash.values.sorted(by: precedes)

        // 1. The graph and each operation's causal past (as bit sets over graph positions).
        var graph: [RoomOperation] = []
        var position: [RoomOperationHash: Int] = [:]
        var past: [BitSet] = []
        var waiting: Set<RoomOperationHash> = []
        let capacity = ordered.count
        for op in ordered {
            if case .create = op.change {
                if op.hash == root.hash {
                    position[op.hash] = graph.count
                    graph.append(op)
                    past.append(BitSet(capacity: capacity))
                } else {
                    rejected[op.hash] = .secondCreate
                }
                continue
            }
            var ancestors = BitSet(capacity: capacity)
            var highest: UInt64 = 0
            var verdict: RoomOperationRejection?
            var missing = false
            for parent in op.parents {
                if let i = position[parent] {
                    ancestors.formUnion(past[i])
                    work += (capacity + 63) / 64
                    ancestors.insert(i)
                    highest = max(highest, graph[i].sequence)
                } else if let p = byHash[parent] {
                    if !precedes(p, op) {
                        verdict = .badSequence
                    }  // a "parent" that comes later
                    else if waiting.contains(parent) {
                        missing = true
                    } else if verdict == nil {
                        verdict = .rejectedAncestor
                    }
                } else {
                    missing = true
                }
            }
            if let verdict {
                rejected[op.hash] = verdict
                continue
            }
            if missing {
                waiting.insert(op.hash)
                continue
            }
            guard op.sequence == highest + 1 else {
                rejected[op.hash] = .badSequence
                continue
            }
            position[op.hash] = graph.count
            graph.append(op)
            past.append(ancestors)
        }

        // The state after the graph operations before `end` selected by `include`, in graph
        // order. An operation's past lies entirely before it, so `end` bounds each replay.
        func fold(upTo end: Int, _ include: (Int) -> Bool) -> RoomFold {
            var state = RoomFold()
            work += end
            for i in 0..<end where include(i) { state.apply(graph[i]) }
            return state
        }
        func concurrent(_ a: Int, _ b: Int) -> Bool { a != b && !past[a].contains(b) && !past[b].contains(a) }
        var byActor: [IdentityPublicKey: [Int]] = [:]
        for i in graph.indices { byActor[graph[i].actor, default: []].append(i) }
        /// Whether the actor of `lowering` had seen `op`: `op` is in the past of another
        /// operation of that actor's that does not follow `lowering`.
        func seen(_ op: Int, by lowering: Int) -> Bool {
            work += byActor[graph[lowering].actor, default: []].count
            return byActor[graph[lowering].actor, default: []].contains { p in
                p != lowering && !past[p].contains(lowering) && past[p].contains(op)
            }
        }

        // 3 without 4 and 5: which operations had authority in their past, each actor's
        // rank there, and the lowerings among them.
        var authorized = [Bool](repeating: false, count: graph.count)
        var rank = [UInt8](repeating: 0, count: graph.count)  // 0: not a member there
        var lowerings: [Int] = []
        var isLowering = [Bool](repeating: false, count: graph.count)
        for i in graph.indices {
            let state = fold(upTo: i) { past[i].contains($0) && authorized[$0] }
            rank[i] = state.roles[graph[i].actor]?.rawValue ?? 0
            if graph[i].hash == root.hash {
                authorized[i] = true
                rank[i] = RoomRole.owner.rawValue
                continue
            }
            guard RoomAuthority.check(graph[i], in: state) == nil else { continue }
            authorized[i] = true
            switch graph[i].change {
            case .remove:
                lowerings.append(i)
                isLowering[i] = true
            case let .setRole(t, r) where r < (state.roles[t] ?? .member):
                lowerings.append(i)
                isLowering[i] = true
            default:
                break
            }
        }

        // 4. Who threatens whom.
        var removalThreats = [[Int]](repeating: [], count: graph.count)
        var addThreats = [[Int]](repeating: [], count: graph.count)
        for l in lowerings {
            guard let target = graph[l].target else { continue }
            let ofItself = target == graph[l].actor
            for o in byActor[target, default: []] where concurrent(l, o) && (ofItself || !seen(o, by: l)) {
                // Two departures of one member (left twice, stepped down and left) both
                // lower it: neither needs to void the other.
                if ofItself, isLowering[o], graph[o].target == target { continue }
                removalThreats[o].append(l)
            }
            guard case .remove = graph[l].change, !ofItself else { continue }
            work += graph.count
            for o in graph.indices where concurrent(l, o) && rank[l] >= rank[o] && !seen(o, by: l) {
                if case .add(target) = graph[o].change { addThreats[o].append(l) }
            }
        }

        // 5. Decide, one operation at a time.
        var decided = [Bool](repeating: false, count: graph.count)
        var applied = [Bool](repeating: false, count: graph.count)
        var decidedCount = 0
        func ready(_ i: Int) -> Bool { graph[i].parents.allSatisfy { position[$0].map { decided[$0] } ?? false } }
        func free(_ i: Int) -> Bool { (removalThreats[i] + addThreats[i]).allSatisfy { decided[$0] } }
        while decidedCount < graph.count {
            // Graph order is (sequence, hash) order: the first match is the lowest.
            var next = graph.indices.first { !decided[$0] && ready($0) && free($0) }
            work += next ?? graph.count
            if next == nil {
                // A cycle: ignore the weakest threat. First the operation whose strongest
                // undecided threat ranks lowest, then the lowest ranked, then the lowest.
                func strongest(_ i: Int) -> UInt8 {
                    (removalThreats[i] + addThreats[i]).filter { !decided[$0] }.map { rank[$0] }.max() ?? 0
                }
                next = graph.indices.filter { !decided[$0] && ready($0) }
                    .min { (strongest($0), rank[$0], $0) < (strongest($1), rank[$1], $1) }
            }
            guard let i = next else { break }  // unreachable: the root has no parents
            decided[i] = true
            decidedCount += 1
            let op = graph[i]
            if op.hash == root.hash {
                applied[i] = true
                continue
            }
            let state = fold(upTo: i) { past[i].contains($0) && applied[$0] }
            if let why = RoomAuthority.check(op, in: state) {
                rejected[op.hash] = why
                continue
            }
            // A threat decided after this operation (a cycle was broken here) is ignored.
            if removalThreats[i].contains(where: { decided[$0] && applied[$0] }) {
                rejected[op.hash] = .removedConcurrently
                continue
            }
            if addThreats[i].contains(where: { decided[$0] && applied[$0] }) {
                rejected[op.hash] = .overruled
                continue
            }
            applied[i] = true
        }

        // 6.
        let final = fold(upTo: graph.count) { applied[$0] }
        work += graph.count
        // Heads come from applied operations only: a node never builds on an operation
        // that others may have refused to keep (so its own would wait there forever), and
        // a voided operation never enters the past of an honest one.
        let appliedOps = graph.indices.filter { applied[$0] }.map { graph[$0] }
        var followed = Set<RoomOperationHash>()
        for op in appliedOps { followed.formUnion(op.parents) }
        let heads = appliedOps.filter { !followed.contains($0.hash) }
            .sorted { precedes($1, $0) }
            .prefix(RoomLimits.maxParents)
        return RoomState(
            roomID: root.roomID, name: final.name, policy: final.policy, creator: root.actor,
            createdAt: root.createdAt, root: root.hash, members: final.roles.keys.sorted(),
            roles: final.roles, joined: final.joined.sorted(),
            version: appliedOps.map(\.sequence).max() ?? 1,
            applied: appliedOps.map(\.hash), rejected: rejected,
            waiting: ordered.filter { waiting.contains($0.hash) }.map(\.hash),
            heads: Array(heads))
    }

    /// The total order of operations: (sequence, hash), ascending.
    public static func precedes(_ a: RoomOperation, _ b: RoomOperation) -> Bool {
        a.sequence != b.sequence ? a.sequence < b.sequence : a.hash < b.hash
    }
}

/// A fixed-size set of small integers (graph positions).
struct BitSet: Equatable {
    private var words: [UInt64]

    init(capacity: Int) { words = [UInt64](repeating: 0, count: (capacity + 63) / 64) }

    mutating func insert(_ i: Int) { words[i >> 6] |= 1 << UInt64(i & 63) }

    func contains(_ i: Int) -> Bool { words[i >> 6] & (1 << UInt64(i & 63)) != 0 }

    mutating func formUnion(_ other: BitSet) {
        for k in words.indices { words[k] |= other.words[k] }
    }
}
