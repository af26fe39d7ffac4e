/// Why the resolver did not apply an operation. Each is final for the given set of
/// operations; only `waiting` operations can still be applied once more arrive.
public enum RoomOperationRejection: String, Sendable, Equatable {
    /// The operation names another room.
    case otherRoom
    /// A create other than the room's pinned one.
    case secondCreate
    /// Its sequence is not one more than its highest parent's.
    case badSequence
    /// One of its ancestors was rejected for one of the reasons above, so it does not
    /// belong to this room's graph.
    case rejectedAncestor
    /// Its actor was not a member in the state of its causal past.
    case notMember
    /// A removal of its actor, concurrent with it, wins ("removal wins").
    case removedConcurrently
}

/// What a room looks like after resolving a set of operations: the same on every node that
/// holds the same operations, whatever order they arrived in.
public struct RoomState: Equatable, Sendable {
    public let roomID: RoomID
    public let name: String
    public let creator: IdentityPublicKey
    /// The creator's clock at creation, Unix milliseconds (informational).
    public let createdAt: UInt64
    /// Hash of the create operation the room grows from.
    public let root: RoomOperationHash
    /// Current members, ascending.
    public let members: [IdentityPublicKey]
    /// Highest sequence among applied operations: grows with every membership change.
    public let version: UInt64
    /// Applied operations, in resolution order.
    public let applied: [RoomOperationHash]
    /// Operations in the graph that were not applied, and why.
    public let rejected: [RoomOperationHash: RoomOperationRejection]
    /// Operations whose ancestors have not all arrived yet.
    public let waiting: [RoomOperationHash]
    /// The operations no other operation follows, highest (sequence, hash) first, at most
    /// `RoomLimits.maxParents`: the parents of this node's next operation.
    public let heads: [RoomOperation]

    public func isMember(_ identity: IdentityPublicKey) -> Bool {
        // Sorted, small (<= 64): a binary search would not be worth its code.
        members.contains(identity)
    }
}

/// The convergence rule for room membership (docs/PROTOCOL.md, "Room operations"). Pure:
/// the same operations give the same state on every node.
///
/// 1. **Graph.** Starting from the pinned create (`root`), an operation belongs to the graph
///    when all its parents do and its sequence is one more than the highest parent's.
///    Operations are taken in **(sequence, hash)** order, which is a topological order of the
///    graph: a parent always has a lower sequence than its child.
/// 2. **Causal past.** The past of an operation is the set of its ancestors: exactly the
///    operations its author had seen when it signed.
/// 3. **Authority.** An operation is applied only if its actor is a member in the state
///    obtained by applying the applied operations of its past, in (sequence, hash) order.
///    So any current member may add or remove anyone (itself included: leaving).
/// 4. **Removal wins.** An operation by X is not applied if the graph holds a removal of X
///    that is concurrent with it (neither is in the other's past) and whose own author was
///    a member in that removal's past (checked by rule 3 alone, without rule 4, so the rule
///    is not circular). A removed member thus cannot undo its removal by signing operations
///    that pretend not to have seen it. Two members who remove each other concurrently both
///    stay: each removal is voided by the other.
/// 5. **State.** Members = the applied operations in (sequence, hash) order, folded: create
///    sets the list, add inserts, remove deletes (adding a member or removing a non-member
///    changes nothing).
public enum RoomResolver {
    /// Resolves `operations` (any order, duplicates and foreign operations allowed) into the
    /// room founded by `root`. Returns nil if `root` is not a create.
    public static func resolve(root: RoomOperation, operations: [RoomOperation]) -> RoomState? {
        guard case let .create(name, _) = root.change else { return nil }
        var rejected: [RoomOperationHash: RoomOperationRejection] = [:]
        var byHash: [RoomOperationHash: RoomOperation] = [root.hash: root]
        for op in operations {
            if op.roomID != root.roomID { rejected[op.hash] = .otherRoom; continue }
            byHash[op.hash] = op
        }
        let ordered = byHash.values.sorted(by: precedes)

        // 1. The graph and each member's causal past (as bit sets over graph positions).
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
                    ancestors.insert(i)
                    highest = max(highest, graph[i].sequence)
                } else if let p = byHash[parent] {
                    if !precedes(p, op) { verdict = .badSequence }        // a "parent" that comes later
                    else if waiting.contains(parent) { missing = true }
                    else if verdict == nil { verdict = .rejectedAncestor }
                } else {
                    missing = true
                }
            }
            if let verdict { rejected[op.hash] = verdict; continue }
            if missing { waiting.insert(op.hash); continue }
            guard op.sequence == highest + 1 else { rejected[op.hash] = .badSequence; continue }
            position[op.hash] = graph.count
            graph.append(op)
            past.append(ancestors)
        }

        // Members after applying the graph operations before position `end` selected by
        // `include`, in graph order (which is (sequence, hash) order). An operation's past
        // lies entirely before it, so `end` bounds each replay to its own position.
        func fold(upTo end: Int, _ include: (Int) -> Bool) -> Set<IdentityPublicKey> {
            var members = Set<IdentityPublicKey>()
            for i in 0..<end where include(i) {
                switch graph[i].change {
                case .create(_, let m): members = Set(m)
                case .add(let k): members.insert(k)
                case .remove(let k): members.remove(k)
                }
            }
            return members
        }

        // 3 without 4: which operations had authority in their past.
        var authorized = [Bool](repeating: false, count: graph.count)
        for i in graph.indices {
            if graph[i].hash == root.hash { authorized[i] = true; continue }
            authorized[i] = fold(upTo: i) { past[i].contains($0) && authorized[$0] }.contains(graph[i].actor)
        }
        let removals: [(index: Int, target: IdentityPublicKey)] = graph.indices.compactMap { i in
            guard authorized[i], case .remove(let target) = graph[i].change else { return nil }
            return (i, target)
        }

        // 3 and 4.
        var applied = [Bool](repeating: false, count: graph.count)
        for i in graph.indices {
            let op = graph[i]
            if op.hash == root.hash { applied[i] = true; continue }
            guard fold(upTo: i, { past[i].contains($0) && applied[$0] }).contains(op.actor) else {
                rejected[op.hash] = .notMember
                continue
            }
            let removedConcurrently = removals.contains { r in
                r.index != i && r.target == op.actor && !past[i].contains(r.index) && !past[r.index].contains(i)
            }
            if removedConcurrently { rejected[op.hash] = .removedConcurrently; continue }
            applied[i] = true
        }

        // 5.
        let members = fold(upTo: graph.count) { applied[$0] }.sorted()
        var followed = Set<RoomOperationHash>()
        for op in graph { followed.formUnion(op.parents) }
        let heads = graph.filter { !followed.contains($0.hash) }
            .sorted { precedes($1, $0) }
            .prefix(RoomLimits.maxParents)
        let appliedOps = graph.indices.filter { applied[$0] }.map { graph[$0] }
        return RoomState(roomID: root.roomID, name: name, creator: root.actor, createdAt: root.createdAt,
                         root: root.hash, members: members,
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
