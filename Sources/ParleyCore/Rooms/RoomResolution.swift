import HeapModule

/// A room resolved incrementally: `RoomResolver`'s rule (docs/PROTOCOL.md, "Who may do
/// what, and convergence"), kept as a cache that takes one new operation at a time, so a
/// node does not replay the room's history after every operation (issue 30, "Rooms as big
/// as an office"). `state` always equals `RoomResolver.resolve` over the same operations
/// (`RoomResolutionPropertyTests`); the full replay stays the reference.
///
/// How it stays exact and cheap. Each operation's causal past is a bit set; the state of a
/// past is never folded whole: `RoomAuthority` reads only the members an operation is
/// about, the name, the policy and whether the room is full, and each of these is folded
/// from the few operations that touch it (`keyOps`, `nameOps`, `policyOps`), filtered by the
/// past. A new operation N whose parents are all in the graph is **decided alone**
/// (`insert`, the fast path) when it cannot change a decision already made:
///
/// - N lowers nobody whose concurrent operations it would void (a removal or demotion
///   concurrent with operations of its target, or with an add of the key it removes);
/// - N's actor has no lowering concurrent with N whose "had seen" (rule 4) N would change;
/// - if N is threatened (a concurrent lowering of its actor, a concurrent removal of the
///   key it adds), the decisions so far needed no cycle to be broken (rule 5), so N's
///   threats are decided before N, as the full order decides them.
///
/// N then threatens nothing and nothing waits for it, so every earlier decision stands and
/// N's own is its authority in its past and its threats. Otherwise the room is rebuilt
/// (`rebuild`), which is the full rule in O(n²/64 + n·k) (bit sets, per-key folds, a heap
/// for rule 5's order) instead of the reference's O(n²) folds. What triggers a rebuild
/// needs a lowering (an admin's removal or demotion, or a member's own leaving or stepping
/// down: once per membership) concurrent with what it affects; everything a member can do
/// alone (forks, operations on old parents, a flood refused by `RoomAdmission`) takes the
/// fast path. `RoomLimits.maxOperationsPerRoom` bounds n; BENCHMARKS.md rows 16a–16c
/// measure both paths.
public struct RoomResolution: Sendable {
    public let root: RoomOperation
    /// Elementary steps taken since creation (an operation folded or examined, a bit-set
    /// word): the unit `RoomResolver.resolve(root:operations:work:)` counts, for tests and
    /// the bench.
    public private(set) var work = 0
    /// Times the whole room was resolved again (the initial build included).
    public private(set) var rebuilds = 0
    /// Operations decided alone.
    public private(set) var fastInserts = 0

    /// Every operation of the room offered, in or out of the graph.
    private var offered = Offered()
    /// The graph, by id (the order operations joined it: (sequence, hash) order after a
    /// rebuild; later ones are appended, so order comparisons use `precedes`).
    private var graph = Graph()
    /// Which operations of the graph touch what: the few a decision has to fold.
    private var index = Index()
    /// Whether rule 5 had to break a cycle: then a threatened new operation is not decided
    /// alone.
    private var cycleBroken = false
    /// The applied operations folded, and what the state shows of them.
    private var shown = Shown()

    private struct Offered {
        var known: [RoomOperationHash: RoomOperation] = [:]
        var rejected: [RoomOperationHash: RoomOperationRejection] = [:]
        var waiting: Set<RoomOperationHash> = []
    }

    /// One column per attribute of an operation in the graph, indexed by its id.
    private struct Graph {
        var ops: [RoomOperation] = []
        var idOf: [RoomOperationHash: Int] = [:]
        var past: [GraphBits] = []
        var authorized: [Bool] = []
        var rank: [UInt8] = []
        var isLowering: [Bool] = []
        var applied: [Bool] = []
    }

    private struct Index {
        /// Per member key: the operations whose fold touches it (create, add, remove, setRole
        /// of it; its join), in (sequence, hash) order.
        var keyOps: [IdentityPublicKey: [Int]] = [:]
        var nameOps: [Int] = []
        var policyOps: [Int] = []
        var byActor: [IdentityPublicKey: [Int]] = [:]
        /// Per key: the adds of it.
        var addsOf: [IdentityPublicKey: [Int]] = [:]
        /// Every add in the graph: how many a past holds bounds how many members it can have.
        var addBits = GraphBits()
        /// Per key: the lowerings (authorised removals and demotions) of it.
        var loweringsOf: [IdentityPublicKey: [Int]] = [:]
    }

    private struct Shown {
        var fold = RoomFold()
        var members: [IdentityPublicKey] = []
        var joined: [IdentityPublicKey] = []
        var appliedOrder: [Int] = []
        var headSet: Set<Int> = []
        var version: UInt64 = 1
    }

    /// Resolves `operations` (any order, duplicates and foreign operations allowed) into the
    /// room founded by `root`, as `RoomResolver.resolve` does. Nil if `root` is not a create.
    public init?(root: RoomOperation, operations: [RoomOperation] = []) {
        guard case .create = root.change else { return nil }
        self.root = root
        offered.known = [root.hash: root]
        for op in operations {
            if op.roomID != root.roomID {
                offered.rejected[op.hash] = .otherRoom
                continue
            }
            offered.known[op.hash] = op
        }
        rebuild()
    }

    /// Operations offered so far (graph, waiting and refused ones of this room).
    public var operationCount: Int { offered.known.count }

    /// The room as resolved now: equal to `RoomResolver.resolve(root:operations:)` over every
    /// operation offered. O(n) (the applied list is copied out).
    public var state: RoomState {
        RoomState(
            roomID: root.roomID, name: shown.fold.name, policy: shown.fold.policy, creator: root.actor,
            createdAt: root.createdAt, root: root.hash, members: shown.members, roles: shown.fold.roles, joined: shown.joined,
            version: shown.version, applied: shown.appliedOrder.map { graph.ops[$0].hash }, rejected: offered.rejected,
            waiting: offered.waiting.compactMap { offered.known[$0] }.sorted(by: RoomResolver.precedes).map(\.hash),
            heads: heads)
    }

    /// `state.heads`, without building the state: the parents of the next operation.
    public var heads: [RoomOperation] {
        Array(shown.headSet.map { graph.ops[$0] }.sorted { RoomResolver.precedes($1, $0) }.prefix(RoomLimits.maxParents))
    }

    /// Takes one more operation. Exactly as if the room were resolved again with it.
    public mutating func insert(_ op: RoomOperation) {
        guard op.roomID == root.roomID else {
            offered.rejected[op.hash] = .otherRoom
            return
        }
        guard offered.known[op.hash] == nil else { return }
        offered.known[op.hash] = op
        if case .create = op.change {
            offered.rejected[op.hash] = .secondCreate
            return
        }
        // Rule 1 for every operation outside the graph, in (sequence, hash) order: the new
        // one, and those that waited (for it, perhaps) or were refused for an ancestor
        // (which a late parent can turn into a bad sequence). Honest rooms hold none of
        // these (a node keeps no waiting operation in the room), so this is one operation.
        var outside: [RoomOperation] = [op]
        for h in offered.waiting { if let o = offered.known[h] { outside.append(o) } }
        for (h, why) in offered.rejected where why == .rejectedAncestor || why == .badSequence {
            if graph.idOf[h] == nil, let o = offered.known[h] { outside.append(o) }
        }
        outside.sort(by: RoomResolver.precedes)
        for o in outside {
            offered.waiting.remove(o.hash)
            offered.rejected[o.hash] = nil
        }
        for o in outside {
            work += 1
            switch classify(o) {
            case .graph(let p):
                guard insertIntoGraph(o, past: p) else {
                    rebuild()
                    return
                }
            case .waiting:
                offered.waiting.insert(o.hash)
            case .rejected(let why):
                offered.rejected[o.hash] = why
            }
        }
    }

    // MARK: Rule 1: the graph

    private enum Place {
        case graph(GraphBits)
        case waiting
        case rejected(RoomOperationRejection)
    }

    /// Where a non-create operation belongs, given the graph and the waiting set so far
    /// (everything that precedes it already placed).
    private mutating func classify(_ op: RoomOperation) -> Place {
        var ancestors = GraphBits()
        var highest: UInt64 = 0
        var verdict: RoomOperationRejection?
        var missing = false
        for parent in op.parents {
            if let i = graph.idOf[parent] {
                work += ancestors.formUnion(graph.past[i])
                ancestors.insert(i)
                highest = max(highest, graph.ops[i].sequence)
            } else if let p = offered.known[parent] {
                if !RoomResolver.precedes(p, op) {
                    verdict = .badSequence
                } else if offered.waiting.contains(parent) {
                    missing = true
                } else if verdict == nil {
                    verdict = .rejectedAncestor
                }
            } else {
                missing = true
            }
        }
        if let verdict { return .rejected(verdict) }
        if missing { return .waiting }
        guard op.sequence == highest + 1 else { return .rejected(.badSequence) }
        return .graph(ancestors)
    }

    // MARK: The state of a past

    /// Role and joined of `k` after the operations that touch it and that `include` selects.
    private mutating func keyState(_ k: IdentityPublicKey, _ include: (Int) -> Bool) -> (RoomRole?, Bool) {
        var role: RoomRole?
        var hasJoined = false
        let list = index.keyOps[k] ?? []
        work += list.count
        for j in list where include(j) {
            let op = graph.ops[j]
            switch op.change {
            case .create(_, let listed, _):
                role = op.actor == k ? .owner : (listed.contains(k) ? .member : nil)
                hasJoined = op.actor == k
            case .add:
                if role == nil { role = .member }
            case .remove:
                role = nil
                hasJoined = false
            case .setRole(_, let r):
                if role != nil { role = r }
            case .join:
                if role != nil { hasJoined = true }
            case .rename, .setPolicy:
                break
            }
        }
        return (role, hasJoined)
    }

    /// What `RoomAuthority` reads to judge `op` in the state of the operations `include`
    /// selects (a past: downward closed, so the create is in it).
    private mutating func view(for op: RoomOperation, past p: GraphBits, _ include: (Int) -> Bool) -> PastView {
        var v = PastView()
        var keys = [op.actor]
        if let t = op.target, t != op.actor { keys.append(t) }
        for k in keys {
            let (r, j) = keyState(k, include)
            v.roles[k] = r
            if j { v.joined.insert(k) }
        }
        switch op.change {
        case .rename:
            work += index.nameOps.count
            if let last = index.nameOps.last(where: include) {
                switch graph.ops[last].change {
                case .create(let n, _, _), .rename(let n): v.name = n
                default: break
                }
            }
        case .add, .setPolicy:
            work += index.policyOps.count
            if let last = index.policyOps.last(where: include) {
                switch graph.ops[last].change {
                case .create(_, _, let p), .setPolicy(let p): v.policy = p
                default: break
                }
            }
            // Members come from the create's list and adds: a past with fewer than the
            // limit of those (one word operation per 64 operations to count) is not full.
            if case .add = op.change { work += (graph.ops.count + 63) / 64 }
            if case .add = op.change, index.keyOps.count >= RoomLimits.maxMembers,
                createListed + p.countCommon(with: index.addBits) >= RoomLimits.maxMembers
            {
                work += index.keyOps.count
                var count = 0
                for k in index.keyOps.keys where keyState(k, include).0 != nil { count += 1 }
                v.isFull = count >= RoomLimits.maxMembers
            }
        default:
            break
        }
        return v
    }

    private struct PastView: RoomAuthorityView {
        var roles: [IdentityPublicKey: RoomRole] = [:]
        var joined: Set<IdentityPublicKey> = []
        var name = ""
        var policy = RoomOperation.Policy()
        var isFull = false
        func role(of k: IdentityPublicKey) -> RoomRole? { roles[k] }
        func hasJoined(_ k: IdentityPublicKey) -> Bool { joined.contains(k) }
    }

    /// Rule 3 for `op` in a past: authorised, its actor's rank there, and whether it is a
    /// lowering.
    private mutating func authority(of op: RoomOperation, past p: GraphBits) -> (Bool, UInt8, Bool) {
        let auth = graph.authorized
        let v = view(for: op, past: p) { p.contains($0) && auth[$0] }
        let r = v.role(of: op.actor)?.rawValue ?? 0
        guard RoomAuthority.check(op, in: v) == nil else { return (false, r, false) }
        switch op.change {
        case .remove:
            return (true, r, true)
        case let .setRole(t, role) where role < (v.role(of: t) ?? .member):
            return (true, r, true)
        default:
            return (true, r, false)
        }
    }

    /// Keys the create lists (its actor included).
    private var createListed: Int {
        if case .create(_, let listed, _) = root.change { return Set(listed + [root.actor]).count }
        return 1
    }

    private func concurrent(_ a: Int, _ b: Int) -> Bool { a != b && !graph.past[a].contains(b) && !graph.past[b].contains(a) }

    /// Whether the actor of `lowering` had seen `op` (rule 4).
    private mutating func seen(_ op: Int, by lowering: Int) -> Bool {
        let mine = index.byActor[graph.ops[lowering].actor] ?? []
        work += mine.count
        return mine.contains { p in p != lowering && !graph.past[p].contains(lowering) && graph.past[p].contains(op) }
    }

    // MARK: The fast path

    /// Decides a new graph operation alone, if it can change no earlier decision (see the
    /// type's comment). Returns false, changing nothing, when the room must be rebuilt.
    private mutating func insertIntoGraph(_ op: RoomOperation, past p: GraphBits) -> Bool {
        let id = graph.ops.count
        let (auth, r, lowering) = authority(of: op, past: p)
        // The graph operations not in its past: all concurrent with it (none follows it).
        let concurrentIDs = p.missing(below: id)
        work += (id + 63) / 64 + concurrentIDs.count
        var removalThreats: [Int] = []
        var addThreats: [Int] = []
        if !concurrentIDs.isEmpty {
            let actor = op.actor
            // It voids nothing concurrent with it.
            if lowering, let t = op.target {
                let ofItself = t == actor
                let mine = index.byActor[actor] ?? []
                func seenNow(_ o: Int) -> Bool { mine.contains { graph.past[$0].contains(o) } }
                for o in index.byActor[t] ?? [] where !p.contains(o) {
                    work += 1 + mine.count
                    if ofItself, graph.isLowering[o], graph.ops[o].target == t { continue }
                    if ofItself || !seenNow(o) { return false }
                }
                if case .remove = op.change, !ofItself {
                    for o in index.addsOf[t] ?? [] where !p.contains(o) {
                        work += 1 + mine.count
                        if r >= graph.rank[o] && !seenNow(o) { return false }
                    }
                }
            }
            // It changes what its actor had seen for none of its actor's concurrent lowerings.
            for l in index.byActor[actor] ?? [] where graph.isLowering[l] && !p.contains(l) {
                guard let t = graph.ops[l].target, t != actor else { continue }
                for o in (index.byActor[t] ?? []) + (index.addsOf[t] ?? []) {
                    work += 1
                    if p.contains(o) && concurrent(l, o) { return false }
                }
            }
            // What threatens it.
            for l in index.loweringsOf[actor] ?? [] where !p.contains(l) {
                work += 1
                let ofItself = graph.ops[l].actor == actor
                if ofItself, lowering, op.target == actor { continue }
                removalThreats.append(l)
            }
            if case .add(let k) = op.change {
                for l in index.loweringsOf[k] ?? [] where !p.contains(l) {
                    work += 1
                    guard case .remove = graph.ops[l].change, graph.ops[l].actor != k, graph.rank[l] >= r else { continue }
                    addThreats.append(l)
                }
            }
            if cycleBroken, !(removalThreats.isEmpty && addThreats.isEmpty) { return false }
        }
        // Decided: after its past, and after its threats (no cycle), as rule 5 orders it.
        let v: PastView
        do {
            let app = graph.applied
            v = view(for: op, past: p) { p.contains($0) && app[$0] }
        }
        var verdict = RoomAuthority.check(op, in: v)
        if verdict == nil, removalThreats.contains(where: { graph.applied[$0] }) { verdict = .removedConcurrently }
        if verdict == nil, addThreats.contains(where: { graph.applied[$0] }) { verdict = .overruled }
        fastInserts += 1
        register(op, past: p, authorized: auth, rank: r, lowering: lowering, applied: verdict == nil)
        if let verdict {
            offered.rejected[op.hash] = verdict
        } else {
            appliedNow(id)
        }
        return true
    }

    /// Adds a graph operation to the indexes.
    private mutating func register(
        _ op: RoomOperation, past p: GraphBits, authorized auth: Bool, rank r: UInt8, lowering: Bool, applied a: Bool
    ) {
        let id = graph.ops.count
        graph.ops.append(op)
        graph.idOf[op.hash] = id
        graph.past.append(p)
        graph.authorized.append(auth)
        graph.rank.append(r)
        graph.isLowering.append(lowering)
        graph.applied.append(a)
        index.byActor[op.actor, default: []].append(id)
        switch op.change {
        case .create(_, let listed, _):
            for k in Set(listed + [op.actor]) { insertKeyOp(id, k) }
            index.nameOps = insertOrdered(id, into: take(&index.nameOps))
            index.policyOps = insertOrdered(id, into: take(&index.policyOps))
        case .add(let k):
            insertKeyOp(id, k)
            index.addsOf[k, default: []].append(id)
            index.addBits.insert(id)
        case .remove(let k), .setRole(let k, _):
            insertKeyOp(id, k)
        case .join:
            insertKeyOp(id, op.actor)
        case .rename:
            index.nameOps = insertOrdered(id, into: take(&index.nameOps))
        case .setPolicy:
            index.policyOps = insertOrdered(id, into: take(&index.policyOps))
        }
        if lowering, let t = op.target { index.loweringsOf[t, default: []].append(id) }
    }

    private mutating func insertKeyOp(_ id: Int, _ k: IdentityPublicKey) {
        index.keyOps[k] = insertOrdered(id, into: index.keyOps.removeValue(forKey: k) ?? [])
    }

    /// Moves a list out (so inserting into it copies nothing).
    private func take(_ list: inout [Int]) -> [Int] {
        var out: [Int] = []
        swap(&out, &list)
        return out
    }

    /// `list` with `id` inserted, kept in (sequence, hash) order.
    private mutating func insertOrdered(_ id: Int, into list: [Int]) -> [Int] {
        var list = list
        var lo = 0
        var hi = list.count
        while lo < hi {
            work += 1
            let mid = (lo + hi) / 2
            if RoomResolver.precedes(graph.ops[list[mid]], graph.ops[id]) { lo = mid + 1 } else { hi = mid }
        }
        list.insert(id, at: lo)
        return list
    }

    /// A newly applied operation: the fold of what it touches, heads, version, order.
    private mutating func appliedNow(_ id: Int) {
        let op = graph.ops[id]
        shown.appliedOrder = insertOrdered(id, into: take(&shown.appliedOrder))
        for parent in op.parents { if let pid = graph.idOf[parent] { shown.headSet.remove(pid) } }
        shown.headSet.insert(id)
        shown.version = max(shown.version, op.sequence)
        let app = graph.applied
        switch op.change {
        case .rename:
            if let last = index.nameOps.last(where: { app[$0] }), case .rename(let n) = graph.ops[last].change { shown.fold.name = n }
        case .setPolicy:
            if let last = index.policyOps.last(where: { app[$0] }), case .setPolicy(let p) = graph.ops[last].change {
                shown.fold.policy = p
            }
        case .create:
            break  // only in a rebuild
        default:
            guard let k = op.target else { break }
            let (r, j) = keyState(k) { app[$0] }
            if (shown.fold.roles[k] != nil) != (r != nil) {
                if r != nil { Self.sortedInsert(k, into: &shown.members) } else { Self.sortedRemove(k, from: &shown.members) }
            }
            if shown.fold.joined.contains(k) != j {
                if j { Self.sortedInsert(k, into: &shown.joined) } else { Self.sortedRemove(k, from: &shown.joined) }
            }
            shown.fold.roles[k] = r
            if j { shown.fold.joined.insert(k) } else { shown.fold.joined.remove(k) }
        }
    }

    /// The first index whose key is not below `k`.
    private static func lowerBound(_ k: IdentityPublicKey, in list: [IdentityPublicKey]) -> Int {
        var lo = 0
        var hi = list.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if list[mid] < k { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    private static func sortedInsert(_ k: IdentityPublicKey, into list: inout [IdentityPublicKey]) {
        let i = lowerBound(k, in: list)
        if i == list.count || list[i] != k { list.insert(k, at: i) }
    }

    private static func sortedRemove(_ k: IdentityPublicKey, from list: inout [IdentityPublicKey]) {
        let i = lowerBound(k, in: list)
        if i < list.count, list[i] == k { list.remove(at: i) }
    }

    // MARK: The whole rule

    /// Resolves every known operation again (rules 1–6): what `RoomResolver.resolve` does,
    /// with bit sets, per-key folds and a heap for rule 5.
    private mutating func rebuild() {
        rebuilds += 1
        offered.rejected = offered.rejected.filter { $0.value == .otherRoom }
        offered.waiting = []
        graph.ops = []
        graph.idOf = [:]
        graph.past = []
        graph.authorized = []
        graph.rank = []
        graph.isLowering = []
        graph.applied = []
        index.keyOps = [:]
        index.nameOps = []
        index.policyOps = []
        index.byActor = [:]
        index.addsOf = [:]
        index.addBits = GraphBits()
        index.loweringsOf = [:]
        cycleBroken = false
        shown.fold = RoomFold()
        shown.appliedOrder = []
        shown.headSet = []
        shown.version = 1

        // 1. The graph, in (sequence, hash) order: ids are graph positions here.
        let ordered = offered.known.values.sorted(by: RoomResolver.precedes)
        work += ordered.count
        for op in ordered {
            if case .create = op.change {
                if op.hash == root.hash {
                    register(
                        op, past: GraphBits(), authorized: true, rank: RoomRole.owner.rawValue, lowering: false,
                        applied: true)
                } else {
                    offered.rejected[op.hash] = .secondCreate
                }
                continue
            }
            switch classify(op) {
            case .graph(let p): register(op, past: p, authorized: false, rank: 0, lowering: false, applied: false)
            case .waiting: offered.waiting.insert(op.hash)
            case .rejected(let why): offered.rejected[op.hash] = why
            }
        }
        let n = graph.ops.count
        guard n > 0 else { return }  // unreachable: the root is in its own graph

        // 3. Authority in the authorised past, rank, lowerings.
        index.loweringsOf = [:]
        for i in 1..<n {
            let (auth, r, lowering) = authority(of: graph.ops[i], past: graph.past[i])
            graph.authorized[i] = auth
            graph.rank[i] = r
            graph.isLowering[i] = lowering
            if lowering, let t = graph.ops[i].target { index.loweringsOf[t, default: []].append(i) }
        }

        // 4. Who threatens whom.
        var removalThreats = [[Int]](repeating: [], count: n)
        var addThreats = [[Int]](repeating: [], count: n)
        var threatens = [[Int]](repeating: [], count: n)
        for l in 0..<n where graph.isLowering[l] {
            guard let target = graph.ops[l].target else { continue }
            let ofItself = target == graph.ops[l].actor
            for o in index.byActor[target] ?? [] {
                work += 1
                guard concurrent(l, o), ofItself || !seen(o, by: l) else { continue }
                if ofItself, graph.isLowering[o], graph.ops[o].target == target { continue }
                removalThreats[o].append(l)
                threatens[l].append(o)
            }
            guard case .remove = graph.ops[l].change, !ofItself else { continue }
            for o in index.addsOf[target] ?? [] {
                work += 1
                guard concurrent(l, o), graph.rank[l] >= graph.rank[o], !seen(o, by: l) else { continue }
                addThreats[o].append(l)
                threatens[l].append(o)
            }
        }

        // 5. Decide, one operation at a time: the lowest ready and free one first.
        var children = [[Int]](repeating: [], count: n)
        var pendingParents = [Int](repeating: 0, count: n)
        var pendingThreats = [Int](repeating: 0, count: n)
        for i in 0..<n {
            for parent in graph.ops[i].parents {
                if let pid = graph.idOf[parent] {
                    children[pid].append(i)
                    pendingParents[i] += 1
                }
            }
            pendingThreats[i] = removalThreats[i].count + addThreats[i].count
        }
        var decided = [Bool](repeating: false, count: n)
        var heap = Heap<Int>()  // rule 5 takes the lowest ready operation first
        for i in 0..<n where pendingParents[i] == 0 && pendingThreats[i] == 0 { heap.insert(i) }
        var decidedCount = 0
        while decidedCount < n {
            var next = heap.popMin()
            work += 1
            if next == nil {
                // A cycle: ignore the weakest threat. First the operation whose strongest
                // undecided threat ranks lowest, then the lowest ranked, then the lowest.
                cycleBroken = true
                work += n
                func strongest(_ i: Int) -> UInt8 {
                    (removalThreats[i] + addThreats[i]).filter { !decided[$0] }.map { graph.rank[$0] }.max() ?? 0
                }
                next = (0..<n).filter { !decided[$0] && pendingParents[$0] == 0 }
                    .min { (strongest($0), graph.rank[$0], $0) < (strongest($1), graph.rank[$1], $1) }
            }
            guard let i = next else { break }  // unreachable: the root has no parents
            decided[i] = true
            decidedCount += 1
            if i != 0 {
                let v: PastView
                do {
                    let app = graph.applied
                    let p = graph.past[i]
                    v = view(for: graph.ops[i], past: p) { p.contains($0) && app[$0] }
                }
                if let why = RoomAuthority.check(graph.ops[i], in: v) {
                    offered.rejected[graph.ops[i].hash] = why
                } else if removalThreats[i].contains(where: { decided[$0] && graph.applied[$0] }) {
                    offered.rejected[graph.ops[i].hash] = .removedConcurrently
                } else if addThreats[i].contains(where: { decided[$0] && graph.applied[$0] }) {
                    offered.rejected[graph.ops[i].hash] = .overruled
                } else {
                    graph.applied[i] = true
                }
            }
            for c in children[i] {
                pendingParents[c] -= 1
                if pendingParents[c] == 0, pendingThreats[c] == 0, !decided[c] { heap.insert(c) }
            }
            for o in threatens[i] {
                pendingThreats[o] -= 1
                if pendingParents[o] == 0, pendingThreats[o] == 0, !decided[o] { heap.insert(o) }
            }
        }

        // 6. The applied operations folded; heads from applied operations only.
        var followed = Set<RoomOperationHash>()
        for i in 0..<n where graph.applied[i] {
            shown.fold.apply(graph.ops[i])
            shown.appliedOrder.append(i)
            followed.formUnion(graph.ops[i].parents)
            shown.version = max(shown.version, graph.ops[i].sequence)
        }
        work += n
        shown.headSet = Set(shown.appliedOrder.filter { !followed.contains(graph.ops[$0].hash) })
        shown.members = shown.fold.roles.keys.sorted()
        shown.joined = shown.fold.joined.sorted()
    }
}

/// A set of small integers (graph ids) that grows as the graph does.
struct GraphBits: Sendable, Equatable {
    private var words: [UInt64] = []

    init() {}

    mutating func insert(_ i: Int) {
        let w = i >> 6
        if w >= words.count { words += [UInt64](repeating: 0, count: w - words.count + 1) }
        words[w] |= 1 << UInt64(i & 63)
    }

    func contains(_ i: Int) -> Bool {
        let w = i >> 6
        return w < words.count && words[w] & (1 << UInt64(i & 63)) != 0
    }

    /// How many ids both sets hold.
    func countCommon(with other: GraphBits) -> Int {
        var n = 0
        for k in 0..<min(words.count, other.words.count) { n += (words[k] & other.words[k]).nonzeroBitCount }
        return n
    }

    /// The ids below `n` not in the set, ascending.
    func missing(below n: Int) -> [Int] {
        var out: [Int] = []
        var w = 0
        while w * 64 < n {
            let bits = w < words.count ? words[w] : 0
            if bits != UInt64.max {
                for b in 0..<64 where bits & (1 << UInt64(b)) == 0 && w * 64 + b < n { out.append(w * 64 + b) }
            }
            w += 1
        }
        return out
    }

    /// Returns the words touched (the work it took).
    @discardableResult
    mutating func formUnion(_ other: GraphBits) -> Int {
        if other.words.count > words.count {
            words += [UInt64](repeating: 0, count: other.words.count - words.count)
        }
        for k in other.words.indices { words[k] |= other.words[k] }
        return other.words.count
    }
}
