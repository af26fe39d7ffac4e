/// Where each private-presence token (docs/PROTOCOL.md, "Private presence") was seen
/// advertised. An honest node advertises one instance, and a fresh nonce (so a fresh token)
/// whenever it advertises anew; anyone on the LAN can read its current token and
/// re-advertise it under another instance name at an address of their choosing (issue 29,
/// M3: a replayed token made every node dial the attacker's victim). A token already seen
/// under another instance at other hosts is therefore suspicious: the dial planner never
/// lets it count as a known peer (it is dialled only under the per-host rate, and never
/// while a session with the peer it names is up).
///
/// Pure and bounded: at most `maxTokens` tokens, the oldest forgotten first.
public struct PresenceSightings: Sendable, Equatable {
    /// Tokens remembered: every advertised target's, several times over (tokens rotate
    /// hourly; `forget` drops a withdrawn instance's).
    public static let maxTokens = NodeLimits.maxDiscoveredTargets * 4

    struct Sighting: Sendable, Equatable {
        var instance: String
        var hosts: Set<String>
    }

    private var seen: [[UInt8]: Sighting] = [:]
    private var order: [[UInt8]] = []
    public let maxTokens: Int

    public init(maxTokens: Int = Self.maxTokens) { self.maxTokens = maxTokens }

    /// Records `token` advertised by `instance` at `hosts`; true if it is suspicious: the
    /// same token was seen under another instance at none of these hosts (a copy). The
    /// first sighting stays the token's: a replay does not displace the original.
    public mutating func observe(token: [UInt8], instance: String, hosts: Set<String>) -> Bool {
        if let s = seen[token] {
            if s.instance == instance {
                seen[token]!.hosts.formUnion(hosts)  // the same instance re-resolved (a new address)
                return false
            }
            return s.hosts.isDisjoint(with: hosts)
        }
        seen[token] = Sighting(instance: instance, hosts: hosts)
        order.append(token)
        if order.count > maxTokens { seen[order.removeFirst()] = nil }
        return false
    }

    /// The instance was withdrawn: its tokens are forgotten (a copy seen later is then the
    /// first sighting, and is dialled under the per-host rate like any advertisement).
    public mutating func forget(instance: String) {
        let gone = Set(seen.filter { $0.value.instance == instance }.keys)
        guard !gone.isEmpty else { return }
        for t in gone { seen[t] = nil }
        order.removeAll { gone.contains($0) }
    }

    public var count: Int { seen.count }
}
