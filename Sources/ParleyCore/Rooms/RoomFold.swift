/// A room's state as operations are applied to it, in (sequence, hash) order: rule 6 of
/// "Who may do what, and convergence". No authority check here (`RoomAuthority` does that):
/// folding only records what valid operations say.
public struct RoomFold: Equatable, Sendable {
    /// Members, joined or invited, with their role.
    public var roles: [IdentityPublicKey: RoomRole] = [:]
    /// Members who joined (accepted the invitation).
    public var joined: Set<IdentityPublicKey> = []
    public var name = ""
    public var policy = RoomOperation.Policy()

    public init() {}

    /// The role of a joined member; nil for an invited or non-member (who may not act).
    public func actingRank(_ k: IdentityPublicKey) -> RoomRole? { joined.contains(k) ? roles[k] : nil }

    public func role(of k: IdentityPublicKey) -> RoomRole? { roles[k] }

    public func hasJoined(_ k: IdentityPublicKey) -> Bool { joined.contains(k) }

    public var isFull: Bool { roles.count >= RoomLimits.maxMembers }

    public mutating func apply(_ op: RoomOperation) {
        switch op.change {
        case let .create(name, members, policy):
            roles = Dictionary(uniqueKeysWithValues: members.map { ($0, RoomRole.member) })
            roles[op.actor] = .owner
            joined = [op.actor]
            self.name = name
            self.policy = policy
        case .add(let k):
            if roles[k] == nil { roles[k] = .member }
        case .remove(let k):
            roles[k] = nil
            joined.remove(k)
        case let .setRole(k, r):
            if roles[k] != nil { roles[k] = r }
        case .rename(let n):
            name = n
        case .setPolicy(let p):
            policy = p
        case .join:
            if roles[op.actor] != nil { joined.insert(op.actor) }
        }
    }
}

/// What `RoomAuthority` reads of the state of an operation's past: a whole `RoomFold`, or
/// (in `RoomResolution`) only the members an operation is about, folded on demand.
public protocol RoomAuthorityView {
    func role(of k: IdentityPublicKey) -> RoomRole?
    func hasJoined(_ k: IdentityPublicKey) -> Bool
    var name: String { get }
    var policy: RoomOperation.Policy { get }
    /// `RoomLimits.maxMembers` members, joined or invited.
    var isFull: Bool { get }
}

extension RoomFold: RoomAuthorityView {}

/// Who may do what (docs/PROTOCOL.md, "Roles"): whether `op` is permitted in `state`, the
/// state of the valid operations of its past. Nil when permitted; otherwise why not.
///
/// - Joining: an invited member. Leaving (removing oneself): any member, invited or joined.
/// - Everything else needs a *joined* member.
/// - Add: any joined member, or only admins and owners when the policy says so.
/// - Remove another: an admin or owner, of a member ranked strictly below it.
/// - Set a role: an admin or owner, on a member ranked strictly below it, to at most its
///   own rank; on itself, only lower (stepping down).
/// - Rename, set the policy: an admin or owner.
/// - An operation that changes nothing is refused, and an add to a full room.
public enum RoomAuthority {
    public static func check<State: RoomAuthorityView>(_ op: RoomOperation, in state: State) -> RoomOperationRejection?
    {
        let actor = op.actor
        switch op.change {
        case .create:
            return .secondCreate
        case .join:
            guard state.role(of: actor) != nil else { return .notMember }
            return state.hasJoined(actor) ? .noEffect : nil
        case .remove(let t) where t == actor:
            return state.role(of: actor) == nil ? .notMember : nil
        default:
            break
        }
        guard state.hasJoined(actor), let rank = state.role(of: actor) else { return .notMember }
        switch op.change {
        case .add(let k):
            if state.policy.onlyAdminsAdd && rank < .admin { return .notPermitted }
            if state.role(of: k) != nil { return .noEffect }
            return state.isFull ? .roomFull : nil
        case .remove(let t):
            guard rank >= .admin else { return .notPermitted }
            guard let theirs = state.role(of: t) else { return .noEffect }
            return rank > theirs ? nil : .notPermitted
        case let .setRole(t, r):
            guard rank >= .admin || t == actor else { return .notPermitted }
            guard let theirs = state.role(of: t) else { return .noEffect }
            if r == theirs { return .noEffect }
            if t == actor { return r < rank ? nil : .notPermitted }
            return rank > theirs && r <= rank ? nil : .notPermitted
        case .rename(let n):
            guard rank >= .admin else { return .notPermitted }
            return n == state.name ? .noEffect : nil
        case .setPolicy(let p):
            guard rank >= .admin else { return .notPermitted }
            return p == state.policy ? .noEffect : nil
        case .create, .join:
            return nil  // handled above
        }
    }
}
