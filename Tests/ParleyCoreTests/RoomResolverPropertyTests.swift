import ParleyCore
import SeededRandom
import XCTest

/// Property tests of the room rule (issue 29, H2) over random operation graphs: members on
/// nodes with partial views act concurrently (adds, joins, promotions, demotions,
/// removals, leaving, stepping down), and any member may instead sign "from the past" with
/// old parents, as a removed or demoted actor would. Seeded (SplitMix64): a failure prints
/// its seed and reproduces exactly.
///
/// - Order independence: every arrival order gives the same room.
/// - No outsider lockout: whatever the graph, the room's owner re-adding a member who is
///   out, and that member accepting, makes it a joined member again (under the version-2
///   rule a void removal by a demoted admin kept it out for good).
/// - A void operation changes nothing: dropping it gives the same room.
final class RoomResolverPropertyTests: XCTestCase {
    static let owner = try! IdentityKeyPair(seed: ExampleKeys.seed(from: 0x00))  // fixed 32-byte seed
    /// Everyone else who may be in the room.
    static let others: [IdentityKeyPair] = [0x40, 0x60, 0x80, 0xa0, 0xc0].map {
        try! IdentityKeyPair(seed: ExampleKeys.seed(from: $0))  // fixed 32-byte seed
    }
    /// ROOM_GRAPHS=N explores more (the default keeps the suite near a minute).
    static let graphs = ProcessInfo.processInfo.environment["ROOM_GRAPHS"].flatMap { Int($0) } ?? 200
    static let stepsPerGraph = 50

    /// One random history: the root, every operation signed, each actor's view.
    struct History {
        var root: RoomOperation
        var all: [RoomOperationHash: RoomOperation] = [:]
        var views: [IdentityPublicKey: Set<RoomOperationHash>] = [:]
        var clock: UInt64 = 0
        /// Operations signed from the past, with their actor's role there.
        var backdated: [(op: RoomOperation, role: RoomRole)] = []

        var operations: [RoomOperation] { all.values.sorted(by: RoomResolver.precedes) }

        /// In (sequence, hash) order: a Set's order changes from run to run, and the
        /// generator must make the same history from the same seed.
        func ops(in view: Set<RoomOperationHash>) -> [RoomOperation] {
            view.compactMap { all[$0] }.sorted(by: RoomResolver.precedes)
        }

        /// `op` and its ancestors.
        func closure(of op: RoomOperation) -> Set<RoomOperationHash> {
            var seen: Set<RoomOperationHash> = []
            var stack = [op.hash]
            while let h = stack.popLast() {  // bounded: each hash is visited once
                guard seen.insert(h).inserted, let o = all[h] else { continue }
                stack.append(contentsOf: o.parents)
            }
            return seen
        }

        mutating func deliver(_ op: RoomOperation, to k: IdentityPublicKey) {
            views[k, default: []].formUnion(closure(of: op))
        }
    }

    func randomChange(_ state: RoomState, actor: IdentityPublicKey, _ rng: inout SplitMix64) -> RoomOperation.Change {
        let people = [Self.owner] + Self.others
        let anyone = people.randomElement(using: &rng)!.publicKey
        let members = state.members.isEmpty ? [anyone] : state.members
        let someMember = members.randomElement(using: &rng)!
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<20: return .add(anyone)
        case 20..<36: return .remove(someMember)
        case 36..<48: return .setRole(someMember, .admin)
        case 48..<54: return .setRole(someMember, .owner)
        case 54..<62: return .setRole(someMember, .member)
        case 62..<70: return .remove(actor)  // leave
        case 70..<78: return .setRole(actor, Bool.random(using: &rng) ? .member : .admin)  // step down
        case 78..<83: return .rename(["a", "b", "c"].randomElement(using: &rng)!)
        case 83..<86: return .setPolicy(.init(onlyAdminsAdd: Bool.random(using: &rng)))
        default: return .join
        }
    }

    /// A random history: `steps` times, an actor either signs an ordinary operation on the
    /// heads of its view (kept only if its own node applies it) or, one time in four,
    /// signs from the past (parents: one operation of its view, any); or operations
    /// travel between views.
    func randomHistory(seed: UInt64, steps: Int) throws -> History {
        var rng = SplitMix64(seed: seed)
        let invited = Self.others.filter { _ in Bool.random(using: &rng) }.map(\.publicKey)
        let root = try RoomOperation.create(
            name: "lab", members: invited, policy: .init(onlyAdminsAdd: Bool.random(using: &rng)),
            by: Self.owner, createdAt: 0,
            nonce: RoomID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) })!)
        var h = History(root: root)
        h.all[root.hash] = root
        let people = [Self.owner] + Self.others
        for p in people { h.views[p.publicKey] = [root.hash] }
        for _ in 0..<steps {
            let actor = people.randomElement(using: &rng)!
            let me = actor.publicKey
            let roll = Int.random(in: 0..<100, using: &rng)
            if roll < 25 {
                // Gossip: some operations of one view reach another, with their pasts.
                let from = people.randomElement(using: &rng)!.publicKey
                for o in h.ops(in: h.views[from]!) where Bool.random(using: &rng) { h.deliver(o, to: me) }
                continue
            }
            let view = h.ops(in: h.views[me]!)
            guard let state = RoomResolver.resolve(root: root, operations: view) else { continue }
            let backdated = roll >= 75
            var parents = state.heads
            var pastState = state
            if backdated {
                // Preferably from a past where the actor ranked higher than it does now
                // (a removed or demoted member acting on its old authority).
                let now = state.role(of: me)?.rawValue ?? 0
                for _ in 0..<5 {
                    guard let old = view.randomElement(using: &rng) else { break }
                    parents = [old]
                    pastState = RoomResolver.resolve(root: root, operations: h.ops(in: h.closure(of: old)))!
                    if (pastState.role(of: me)?.rawValue ?? 0) > now { break }
                }
            }
            // Signing from the past, mostly a removal or demotion of someone it outranked
            // there: what a removed or demoted admin would try.
            let below = pastState.members.filter {
                (pastState.role(of: $0) ?? .owner) < (pastState.role(of: me) ?? .member)
            }
            for _ in 0..<6 {  // a few tries at something that its author's view permits
                var change = randomChange(pastState, actor: me, &rng)
                if backdated, let victim = below.randomElement(using: &rng), Int.random(in: 0..<10, using: &rng) < 6 {
                    change = Bool.random(using: &rng) ? .remove(victim) : .setRole(victim, .member)
                }
                // The owner stays a joined owner (the one who restores members below).
                if me == Self.owner.publicKey, change == .remove(me) || change.isSetRole(of: me) { continue }
                h.clock += 1
                guard
                    let op = try? RoomOperation.change(
                        change, roomID: root.roomID, after: parents, by: actor, createdAt: h.clock)
                else { continue }
                let ancestors = backdated ? h.ops(in: h.closure(of: parents[0])) : view
                let trial = RoomResolver.resolve(root: root, operations: ancestors + [op])!
                guard trial.applied.contains(op.hash) else { continue }
                h.all[op.hash] = op
                h.deliver(op, to: me)
                if backdated, let role = pastState.role(of: me) { h.backdated.append((op, role)) }
                break
            }
        }
        return h
    }

    func signOn(_ heads: [RoomOperation], _ change: RoomOperation.Change, by k: IdentityKeyPair, _ h: inout History)
        throws -> RoomOperation
    {
        h.clock += 1
        let op = try RoomOperation.change(change, roomID: h.root.roomID, after: heads, by: k, createdAt: h.clock)
        h.all[op.hash] = op
        return op
    }

    func testEveryArrivalOrderGivesTheSameRoom() throws {
        for seed in 0..<UInt64(Self.graphs) {
            let h = try randomHistory(seed: seed, steps: Self.stepsPerGraph)
            var rng = SplitMix64(seed: seed ^ 0xfeed)
            let reference = RoomResolver.resolve(root: h.root, operations: h.operations)
            for _ in 0..<4 {
                XCTAssertEqual(
                    RoomResolver.resolve(root: h.root, operations: h.operations.shuffled(using: &rng)), reference,
                    "seed \(seed)")
            }
        }
    }

    /// Whatever anyone signed, from whatever past: the owner adds a member who is out, the
    /// member accepts, and it is a joined member. And a member who is in and joined stays
    /// joined when it acts again.
    func testNobodyOutsideTheRoomsAuthorityCanKeepAMemberOut() throws {
        var checked = 0
        for seed in 0..<UInt64(Self.graphs) {
            var h = try randomHistory(seed: seed, steps: Self.stepsPerGraph)
            let s = RoomResolver.resolve(root: h.root, operations: h.operations)!
            XCTAssertTrue(s.hasJoined(Self.owner.publicKey), "seed \(seed)")
            XCTAssertEqual(s.role(of: Self.owner.publicKey), .owner, "seed \(seed)")
            for t in Self.others {
                var g = h
                var state = s
                if !state.isMember(t.publicKey) {
                    let readd = try signOn(state.heads, .add(t.publicKey), by: Self.owner, &g)
                    state = RoomResolver.resolve(root: g.root, operations: g.operations)!
                    XCTAssertTrue(state.applied.contains(readd.hash), "seed \(seed): the owner's add applies")
                }
                if !state.hasJoined(t.publicKey) {
                    let join = try signOn(state.heads, .join, by: t, &g)
                    state = RoomResolver.resolve(root: g.root, operations: g.operations)!
                    XCTAssertEqual(state.rejected[join.hash], nil, "seed \(seed): the join applies")
                }
                XCTAssertTrue(state.hasJoined(t.publicKey), "seed \(seed): \(Fingerprint(t.publicKey)) is back in")
                // Acting again (renaming, as the owner made it an admin) works too.
                if state.role(of: t.publicKey)! < .admin {
                    _ = try signOn(state.heads, .setRole(t.publicKey, .admin), by: Self.owner, &g)
                    state = RoomResolver.resolve(root: g.root, operations: g.operations)!
                }
                let act = try signOn(state.heads, .rename("n\(seed)"), by: t, &g)
                state = RoomResolver.resolve(root: g.root, operations: g.operations)!
                XCTAssertTrue(state.applied.contains(act.hash), "seed \(seed): a restored member acts")
                checked += 1
            }
            h.clock = 0
        }
        XCTAssertEqual(checked, Self.graphs * Self.others.count)
    }

    /// An operation signed on the heads (what an honest node signs) follows every valid
    /// operation: it changes no decision about the operations held before it.
    func testAnOperationOnTheHeadsChangesNoEarlierDecision() throws {
        var tried = 0
        for seed in 0..<UInt64(Self.graphs) {
            var h = try randomHistory(seed: seed, steps: Self.stepsPerGraph)
            var rng = SplitMix64(seed: seed ^ 0xbeef)
            let s = RoomResolver.resolve(root: h.root, operations: h.operations)!
            for actor in [Self.owner] + Self.others where s.hasJoined(actor.publicKey) {
                for _ in 0..<3 {
                    var g = h
                    let change = randomChange(s, actor: actor.publicKey, &rng)
                    guard let next = try? signOn(s.heads, change, by: actor, &g) else { continue }
                    let t = RoomResolver.resolve(root: g.root, operations: g.operations)!
                    guard t.applied.contains(next.hash) else { continue }
                    tried += 1
                    for op in h.operations {
                        XCTAssertEqual(
                            t.applied.contains(op.hash), s.applied.contains(op.hash), "seed \(seed): \(op.change)")
                    }
                }
            }
            h.clock = 0
        }
        XCTAssertGreaterThan(tried, Self.graphs)
    }

    /// An operation that is not applied (voided by a concurrent removal or overruled)
    /// keeps nobody out: everyone who is a member, or joined, in the room without it is
    /// so with it too. (Under the version-2 rule a void removal voided its target's join.)
    /// It is not always without any trace: as a sign of what its actor had seen, it can
    /// keep that actor's own removals from voiding (rule 7).
    func testAVoidOperationKeepsNobodyOut() throws {
        var voids = 0
        for seed in 0..<UInt64(Self.graphs) {
            let h = try randomHistory(seed: seed, steps: Self.stepsPerGraph)
            let s = RoomResolver.resolve(root: h.root, operations: h.operations)!
            let followed = Set(h.operations.flatMap(\.parents))
            for (hash, why) in s.rejected where [.removedConcurrently, .overruled].contains(why) {
                guard !followed.contains(hash) else { continue }  // its children would wait
                let t = RoomResolver.resolve(root: h.root, operations: h.operations.filter { $0.hash != hash })!
                XCTAssertTrue(Set(s.members).isSuperset(of: t.members), "seed \(seed)")
                XCTAssertTrue(Set(s.joined).isSuperset(of: t.joined), "seed \(seed)")
                voids += 1
            }
        }
        XCTAssertGreaterThan(voids, Self.graphs / 10, "the histories exercise voiding")
    }

    /// The histories are not trivial: actors of every rank who are later removed or
    /// demoted sign from the past, some of that is voided, and admins are demoted and
    /// owners step down.
    func testHistoriesCoverRemovedAndDemotedActorsAtEveryRank() throws {
        var covered: Set<String> = []
        var voided = 0
        for seed in 0..<UInt64(Self.graphs) {
            let h = try randomHistory(seed: seed, steps: Self.stepsPerGraph)
            let s = RoomResolver.resolve(root: h.root, operations: h.operations)!
            voided += s.rejected.values.filter { $0 == .removedConcurrently }.count
            for (op, role) in h.backdated {
                if (s.role(of: op.actor)?.rawValue ?? 0) < role.rawValue { covered.insert("lowered \(role) acts") }
                if s.rejected[op.hash] == .removedConcurrently { covered.insert("voided \(role)") }
            }
            for op in h.operations where s.applied.contains(op.hash) {
                if case .setRole(let t, .member) = op.change {
                    covered.insert(t == op.actor ? "stepped down" : "demoted")
                }
            }
        }
        XCTAssertEqual(
            covered,
            [
                "lowered member acts", "lowered admin acts", "lowered owner acts", "voided member", "voided admin",
                "voided owner", "stepped down", "demoted"
            ])
        XCTAssertGreaterThan(voided, Self.graphs / 4)
    }
}

extension RoomOperation.Change {
    func isSetRole(of k: IdentityPublicKey) -> Bool {
        if case .setRole(k, _) = self { return true }
        return false
    }
}
