import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// `doctor.peer`: the dial planner's view of one peer, read only.
extension Node {
    func doctorPeer(_ rec: PeerRecord, mdns: MDNSState) -> DoctorPeerResult {
        let key = rec.identity
        let compact = Fingerprint(key).compact
        let remembered = DialTargetKey(rememberedPeer: key)
        let proven = dialDriver.planner.targets.filter { entry in
            let t = entry.value
            return t.identity == key || t.fingerprintHint == compact || entry.key == remembered
        }
        // An advertisement from a stranger at the time it was found carries no fingerprint
        // (private presence tokens), and its target learns the identity only when a session
        // comes up through it: one at an address where this peer is known to listen counts
        // too (a diagnosis, never a trust decision).
        let listening = Set(addresses(of: rec.identity) + proven.values.flatMap { $0.candidates.map(\.description) })
        let targets = dialDriver.planner.targets.filter { entry in
            proven[entry.key] != nil
                || (entry.value.source == .discovered && entry.value.identity == nil
                    && entry.value.fingerprintHint == nil
                    && entry.value.candidates.contains { listening.contains($0.description) })
        }
        let dialing = targets.sorted { $0.key.rawValue < $1.key.rawValue }.map { _, t in
            DoctorDialTarget(
                source: Self.sourceName(t.source), addresses: t.candidates.map(\.description), failures: t.failures,
                connecting: t.connecting, spoofed: t.spoofed)
        }
        return DoctorPeerResult(
            peer: peerInfo(rec), mdns: mdns,
            advertised: targets.values.contains { $0.source == .discovered && !$0.spoofed }, dialing: dialing)
    }

    private static func sourceName(_ source: DialPlanner.Source) -> String {
        switch source {
        case .configured: return "configured"
        case .discovered: return "discovered"
        case .remembered: return "remembered"
        }
    }
}
