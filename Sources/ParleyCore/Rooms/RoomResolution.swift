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
    private var known: [RoomOperationHash: RoomOperation]
    private var rejected: [RoomOperationHash: RoomOperationRejection] = [:]
    private var waiting: Set<RoomOperationHash> = []

    // The graph, by id (the order operations joined it: (sequence, hash) order after a
    // rebuild; later ones are appended, so order comparisons use `precedes`).
    private var ops: [RoomOperation] = []
    private var idOf: [RoomOperationHash: Int] = [:]
    private var past: [GraphBits] = []
    private var authorized: [Bool] = []
    private var rank: [UInt8] = []
    private var isLowering: [Bool] = []
    private var applied: [Bool] = []
    /// Per member key: the operations whose fold touches it (create, add, remove, setRole
    /// of it; its join), in (sequence, hash) order.
    private var keyOps: [IdentityPublicKey: [Int]] = [:]
    private var nameOps: [Int] = []
    private var policyOps: [Int] = []
    private var byActor: [IdentityPublicKey: [Int]] = [:]
    /// Per key: the adds of it.
    private var addsOf: [IdentityPublicKey: [Int]] = [:]
    /// Every add in the graph: how many a past holds bounds how many members it can have.
    private var addBits = GraphBits()
    /// Per key: the lowerings (authorised removals and demotions) of it.
    private var loweringsOf: [IdentityPublicKey: [Int]] = [:]
    /// Whether rule 5 had to break a cycle: then a threatened new operation is not decided
    /// alone.
    private var cycleBroken = false

    // The applied operations folded, and what the state shows of them.
    private var fold = RoomFold()
    private var members: [IdentityPublicKey] = []
    private var joined: [IdentityPublicKey] = []
    private var appliedOrder: [Int] = []
    private var headSet: Set<Int> = []
    private var version: UInt64 = 1

    /// Resolves `operations` (any order, duplicates and foreign operations allowed) into the
    /// room founded by `root`, as `RoomResolver.resolve` does. Nil if `root` is not a create.
    public init?(root: RoomOperation, operations: [RoomOperation] = []) {
        guard case .create = root.change else { return nil }
        self.root = root
        known = [root.hash: root]
        for op in operations {
            if op.roomID != root.roomID {
                rejected[op.hash] = .otherRoom
                continue
            }
            known[op.hash] = op
        }
        rebuild()
    }

    /// Operations offered so far (graph, waiting and refused ones of this room).
    public var operationCount: Int { known.count }

    /// The room as resolved now: equal to `RoomResolver.resolve(root:operations:)` over every
    /// operation offered. O(n) (the applied list is copied out).
    public var state: RoomState {
        RoomState(
            roomID: root.roomID, name: fold.name, policy: fold.policy, creator: root.actor,
            createdAt: root.createdAt, root: root.hash, members: members, roles: fold.roles, joined: joined,
            version: version, applied: appliedOrder.map { ops[$0].hash }, rejected: rejected,
            waiting: waiting.compactMap { known[$0] }.sorted(by: RoomResolver.precedes).map(\.hash),
            heads: heads)
    }

    /// `state.heads`, without building the state: the parents of the next operation.
    public var heads: [RoomOperation] {
        Array(headSet.map { ops[$0] }.sorted { RoomResolver.precedes($1, $0) }.prefix(RoomLimits.maxParents))
    }

    /// Takes one more operation. Exactly as if the room were resolved again with it.
    public mutating func insert(_ op: RoomOperation) {
        guard op.roomID == root.roomID else {
            rejected[op.hash] = .otherRoom
            return
        }
        guard known[op.hash] == nil else { return }
        known[op.hash] = op
        if case .create = op.change {
            rejected[op.hash] = .secondCreate
            return
        }
        // Rule 1 for every operation outside the graph, in (sequence, hash) order: the new
        // one, and those that waited (for it, perhaps) or were refused for an ancestor
        // (which a late parent can turn into a bad sequence). Honest rooms hold none of
        // these (a node keeps no waiting operation in the room), so this is one operation.
        var outside: [RoomOperation] = [op]
        for h in waiting { if let o = known[h] { outside.append(o) } }
        for (h, why) in rejected where why == .rejectedAncestor || why == .badSequence {
            if idOf[h] == nil, let o = known[h] { outside.append(o) }
        }
        outside.sort(by: RoomResolver.precedes)
        for o in outside {
            waiting.remove(o.hash)
            rejected[o.hash] = nil
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
                waiting.insert(o.hash)
            case .rejected(let why):
                rejected[o.hash] = why
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
            if let i = idOf[parent] {
                work += ancestors.formUnion(past[i])
                ancestors.insert(i)
                highest = max(highest, ops[i].sequence)
            } else if let p = known[parent] {
                if !RoomResolver.precedes(p, op) {
                    verdict = .badSequence
                } else if waiting.contains(parent) {
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
        let list = keyOps[k] ?? []
        work += list.count
        for j in list where include(j) {
            let op = ops[j]
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
            work += nameOps.count
            if let last = nameOps.last(where: include) {
                switch ops[last].change {
                case .create(let n, _, _), .rename(let n): v.name = n
                default: break
                }
            }
        case .add, .setPolicy:
            work += policyOps.count
            if let last = policyOps.last(where: include) {
                switch ops[last].change {
                case .create(_, _, let p), .setPolicy(let p): v.policy = p
                default: break
                }
            }
            // Members come from the create's list and adds: a past with fewer than the
            // limit of those (one word operation per 64 operations to count) is not full.
            if case .add = op.change { work += (ops.count + 63) / 64 }
            if case .add = op.change, keyOps.count >= RoomLimits.maxMembers,
                createListed + p.countCommon(with: addBits) >= RoomLimits.maxMembers
            {
                work += keyOps.count
                var count = 0
                for k in keyOps.keys where keyState(k, include).0 != nil { count += 1 }
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
        let auth = authorized
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

    private func concurrent(_ a: Int, _ b: Int) -> Bool { a != b && !past[a].contains(b) && !past[b].contains(a) }

    /// Whether the actor of `lowering` had seen `op` (rule 4).
    private mutating func seen(_ op: Int, by lowering: Int) -> Bool {
        let mine = byActor[ops[lowering].actor] ?? []
        work += mine.count
        return mine.contains { p in p != lowering && !past[p].contains(lowering) && past[p].contains(op) }
    }

    // MARK: The fast path

    /// Decides a new graph operation alone, if it can change no earlier decision (see the
    /// type's comment). Returns false, changing nothing, when the room must be rebuilt.
    private mutating func insertIntoGraph(_ op: RoomOperation, past p: GraphBits) -> Bool {
        let id = ops.count
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
                let mine = byActor[actor] ?? []
                func seenNow(_ o: Int) -> Bool { mine.contains { past[$0].contains(o) } }
                for o in byActor[t] ?? [] where !p.contains(o) {
                    work += 1 + mine.count
                    if ofItself, isLowering[o], ops[o].target == t { continue }
                    if ofItself || !seenNow(o) { return false }
                }
                if case .remove = op.change, !ofItself {
                    for o in addsOf[t] ?? [] where !p.contains(o) {
                        work += 1 + mine.count
                        if r >= rank[o] && !seenNow(o) { return false }
                    }
                }
            }
            // It changes what its actor had seen for none of its actor's concurrent lowerings.
            for l in byActor[actor] ?? [] where isLowering[l] && !p.contains(l) {
                guard let t = ops[l].target, t != actor else { continue }
                for o in (byActor[t] ?? []) + (addsOf[t] ?? []) {
                    work += 1
                    if p.contains(o) && concurrent(l, o) { return false }
                }
            }
            // What threatens it.
            for l in loweringsOf[actor] ?? [] where !p.contains(l) {
                work += 1
                let ofItself = ops[l].actor == actor
                if ofItself, lowering, op.target == actor { continue }
                removalThreats.append(l)
            }
            if case .add(let k) = op.change {
                for l in loweringsOf[k] ?? [] where !p.contains(l) {
                    work += 1
                    guard case .remove = ops[l].change, ops[l].actor != k, rank[l] >= r else { continue }
                    addThreats.append(l)
                }
            }
            if cycleBroken, !(removalThreats.isEmpty && addThreats.isEmpty) { return false }
        }
        // Decided: after its past, and after its threats (no cycle), as rule 5 orders it.
        let v: PastView
        do {
            let app = applied
            v = view(for: op, past: p) { p.contains($0) && app[$0] }
        }
        var verdict = RoomAuthority.check(op, in: v)
        if verdict == nil, removalThreats.contains(where: { applied[$0] }) { verdict = .removedConcurrently }
        if verdict == nil, addThreats.contains(where: { applied[$0] }) { verdict = .overruled }
        fastInserts += 1
        register(op, past: p, authorized: auth, rank: r, lowering: lowering, applied: verdict == nil)
        if let verdict {
            rejected[op.hash] = verdict
        } else {
            appliedNow(id)
        }
        return true
    }

    /// Adds a graph operation to the indexes.
    private mutating func register(
        _ op: RoomOperation, past p: GraphBits, authorized auth: Bool, rank r: UInt8, lowering: Bool, applied a: Bool
    ) {
        let id = ops.count
        ops.append(op)
        idOf[op.hash] = id
        past.append(p)
        authorized.append(auth)
        rank.append(r)
        isLowering.append(lowering)
        applied.append(a)
        byActor[op.actor, default: []].append(id)
        switch op.change {
        case .create(_, let listed, _):
            for k in Set(listed + [op.actor]) { insertKeyOp(id, k) }
            nameOps = insertOrdered(id, into: take(&nameOps))
            policyOps = insertOrdered(id, into: take(&policyOps))
        case .add(let k):
            insertKeyOp(id, k)
            addsOf[k, default: []].append(id)
            addBits.insert(id)
        case .remove(let k), .setRole(let k, _):
            insertKeyOp(id, k)
        case .join:
            insertKeyOp(id, op.actor)
        case .rename:
            nameOps = insertOrdered(id, into: take(&nameOps))
        case .setPolicy:
            policyOps = insertOrdered(id, into: take(&policyOps))
        }
        if lowering, let t = op.target { loweringsOf[t, default: []].append(id) }
    }

    private mutating func insertKeyOp(_ id: Int, _ k: IdentityPublicKey) {
        keyOps[k] = insertOrdered(id, into: keyOps.removeValue(forKey: k) ?? [])
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
            if RoomResolver.precedes(ops[list[mid]], ops[id]) { lo = mid + 1 } else { hi = mid }
        }
        list.insert(id, at: lo)
        return list
    }

    /// A newly applied operation: the fold of what it touches, heads, version, order.
    private mutating func appliedNow(_ id: Int) {
        let op = ops[id]
        appliedOrder = insertOrdered(id, into: take(&appliedOrder))
        for parent in op.parents { if let pid = idOf[parent] { headSet.remove(pid) } }
        headSet.insert(id)
        version = max(version, op.sequence)
        let app = applied
        switch op.change {
        case .rename:
            if let last = nameOps.last(where: { app[$0] }), case .rename(let n) = ops[last].change { fold.name = n }
        case .setPolicy:
            if let last = policyOps.last(where: { app[$0] }), case .setPolicy(let p) = ops[last].change {
                fold.policy = p
            }
        case .create:
            break  // only in a rebuild
        default:
            guard let k = op.target else { break }
            let (r, j) = keyState(k) { app[$0] }
            if (fold.roles[k] != nil) != (r != nil) {
                if r != nil { Self.sortedInsert(k, into: &members) } else { Self.sortedRemove(k, from: &members) }
            }
            if fold.joined.contains(k) != j {
                if j { Self.sortedInsert(k, into: &joined) } else { Self.sortedRemove(k, from: &joined) }
            }
            fold.roles[k] = r
            if j { fold.joined.insert(k) } else { fold.joined.remove(k) }
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
        rejected = rejected.filter { $0.value == .otherRoom }
        waiting = []
        ops = []
        idOf = [:]
        past = []
        authorized = []
        rank = []
        isLowering = []
        applied = []
        keyOps = [:]
        nameOps = []
        policyOps = []
        byActor = [:]
        addsOf = [:]
        addBits = GraphBits()
        loweringsOf = [:]
        cycleBroken = false
        fold = RoomFold()
        appliedOrder = []
        headSet = []
        version = 1

        // 1. The graph, in (sequence, hash) order: ids are graph positions here.
        let ordered = known.values.sorted(by: RoomResolver.precedes)
        work += ordered.count
        for op in ordered {
            if case .create = op.change {
                if op.hash == root.hash {
                    register(
                        op, past: GraphBits(), authorized: true, rank: RoomRole.owner.rawValue, lowering: false,
                        applied: true)
                } else {
                    rejected[op.hash] = .secondCreate
                }
                continue
            }
            switch classify(op) {
            case .graph(let p): register(op, past: p, authorized: false, rank: 0, lowering: false, applied: false)
            case .waiting: waiting.insert(op.hash)
            case .rejected(let why): rejected[op.hash] = why
            }
        }
        let n = ops.count
        guard n > 0 else { return }  // unreachable: the root is in its own graph

        // 3. Authority in the authorised past, rank, lowerings.
        loweringsOf = [:]
        for i in 1..<n {
            let (auth, r, lowering) = authority(of: ops[i], past: past[i])
            authorized[i] = auth
            rank[i] = r
            isLowering[i] = lowering
            if lowering, let t = ops[i].target { loweringsOf[t, default: []].append(i) }
        }

        // 4. Who threatens whom.
        var removalThreats = [[Int]](repeating: [], count: n)
        var addThreats = [[Int]](repeating: [], count: n)
        var threatens = [[Int]](repeating: [], count: n)
        for l in 0..<n where isLowering[l] {
            guard let target = ops[l].target else { continue }
            let ofItself = target == ops[l].actor
            for o in byActor[target] ?? [] {
                work += 1
                guard concurrent(l, o), ofItself || !seen(o, by: l) else { continue }
                if ofItself, isLowering[o], ops[o].target == target { continue }
                removalThreats[o].append(l)
                threatens[l].append(o)
            }
            guard case .remove = ops[l].change, !ofItself else { continue }
            for o in addsOf[target] ?? [] {
                work += 1
                guard concurrent(l, o), rank[l] >= rank[o], !seen(o, by: l) else { continue }
                addThreats[o].append(l)
                threatens[l].append(o)
            }
        }

        // 5. Decide, one operation at a time: the lowest ready and free one first.
        var children = [[Int]](repeating: [], count: n)
        var pendingParents = [Int](repeating: 0, count: n)
        var pendingThreats = [Int](repeating: 0, count: n)
        for i in 0..<n {
            for parent in ops[i].parents {
                if let pid = idOf[parent] {
                    children[pid].append(i)
                    pendingParents[i] += 1
                }
            }
            pendingThreats[i] = removalThreats[i].count + addThreats[i].count
        }
        var decided = [Bool](repeating: false, count: n)
        var heap = MinHeap()
        for i in 0..<n where pendingParents[i] == 0 && pendingThreats[i] == 0 { heap.push(i) }
        var decidedCount = 0
        while decidedCount < n {
            var next = heap.pop()
            work += 1
            if next == nil {
                // A cycle: ignore the weakest threat. First the operation whose strongest
                // undecided threat ranks lowest, then the lowest ranked, then the lowest.
                cycleBroken = true
                work += n
                func strongest(_ i: Int) -> UInt8 {
                    (removalThreats[i] + addThreats[i]).filter { !decided[$0] }.map { rank[$0] }.max() ?? 0
                }
                next = (0..<n).filter { !decided[$0] && pendingParents[$0] == 0 }
                    .min { (strongest($0), rank[$0], $0) < (strongest($1), rank[$1], $1) }
            }
            guard let i = next else { break }  // unreachable: the root has no parents
            decided[i] = true
            decidedCount += 1
            if i != 0 {
                let v: PastView
                do {
                    let app = applied
                    let p = past[i]
                    v = view(for: ops[i], past: p) { p.contains($0) && app[$0] }
                }
                if let why = RoomAuthority.check(ops[i], in: v) {
                    rejected[ops[i].hash] = why
                } else if removalThreats[i].contains(where: { decided[$0] && applied[$0] }) {
                    rejected[ops[i].hash] = .removedConcurrently
                } else if addThreats[i].contains(where: { decided[$0] && applied[$0] }) {
                    rejected[ops[i].hash] = .overruled
                } else {
                    applied[i] = true
                }
            }
            for c in children[i] {
                pendingParents[c] -= 1
                if pendingParents[c] == 0, pendingThreats[c] == 0, !decided[c] { heap.push(c) }
            }
            for o in threatens[i] {
                pendingThreats[o] -= 1
                if pendingParents[o] == 0, pendingThreats[o] == 0, !decided[o] { heap.push(o) }
            }
        }

        // 6. The applied operations folded; heads from applied operations only.
        var followed = Set<RoomOperationHash>()
        for i in 0..<n where applied[i] {
            fold.apply(ops[i])
            appliedOrder.append(i)
            followed.formUnion(ops[i].parents)
            version = max(version, ops[i].sequence)
        }
        work += n
        headSet = Set(appliedOrder.filter { !followed.contains(ops[$0].hash) })
        members = fold.roles.keys.sorted()
        joined = fold.joined.sorted()
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

/// A binary min-heap of graph ids (rule 5 takes the lowest ready operation first).
private struct MinHeap {
    private var items: [Int] = []

    mutating func push(_ x: Int) {
        items.append(x)
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard items[i] < items[parent] else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() -> Int? {
        guard let top = items.first else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1
                let r = l + 1
                var m = i
                if l < items.count, items[l] < items[m] { m = l }
                if r < items.count, items[r] < items[m] { m = r }
                if m == i { break }
                items.swapAt(i, m)
                i = m
            }
        }
        return top
    }
}
