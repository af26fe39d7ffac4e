import ParleyCore

/// What becomes of a connection whose Noise handshake succeeded: refused, or kept as its
/// peer's session. A state machine in three steps, because the trust decision between
/// them writes (it pins or holds a new key), so it runs only when the checks before it
/// passed: the driver feeds in each step's facts and performs the actions it gets back
/// (`SessionDriver`, the one performer of `Action`).
///
/// The order is the defence against a LAN attacker who picks any name, address or timing:
/// 1. a node that is stopping takes no session;
/// 2. the session caps (`SessionTable.wouldAdmit`) before anything is written, so a flood
///    of fresh keys from one /24 is refused without pinning one of them;
/// 3. the spoof check (`AdvertisedIdentityCheck`) before trust: an mDNS advertisement that
///    claimed a fingerprint its handshake did not prove is closed and its dial target
///    flagged, and the key it did prove is not pinned;
/// 4. the dial planner learns which key the dialled address proved;
/// 5. trust (`TrustDecision`: pin, hold, refuse);
/// 6. the session table (`SessionTable.established`: the tie-break between racing
///    duplicates, the caps again, eviction of a stranger); only the connection it keeps
///    starts the session (gossip, the pumps, room sync). A duplicate closed here starts
///    nothing.
public struct EstablishedSessionDecision: Sendable, Equatable {
    /// What the driver knows when the handshake finishes.
    public struct Facts: Sendable, Equatable {
        /// The node began to stop.
        public var stopping: Bool
        /// `SessionTable.wouldAdmit` for the proven key, its source and standing.
        public var wouldAdmit: Bool
        /// The advertisement's claim against the proven key.
        public var advertised: AdvertisedIdentityCheck
        /// The connection was dialled for a dial target (ours, not inbound).
        public var dialled: Bool

        public init(stopping: Bool, wouldAdmit: Bool, advertised: AdvertisedIdentityCheck, dialled: Bool) {
            self.stopping = stopping
            self.wouldAdmit = wouldAdmit
            self.advertised = advertised
            self.dialled = dialled
        }
    }

    /// Why the connection is closed without a session.
    public enum Refusal: Sendable, Equatable {
        case stopping
        /// Over a session cap (all, per address, per network); nothing was pinned.
        case sessionLimit
        /// The advertisement claimed `claimed`; the handshake proved another key.
        case spoofed(claimed: String)
        /// The trust decision refused (blocked, held, replaced, stale or conflicting card).
        case trust(CloseReason, String)
    }

    public enum Action: Sendable, Equatable {
        /// Close the connection for this reason; nothing starts on it.
        case refuse(Refusal)
        /// Flag the dial target: its advertisement lied (`DialPlanner.spoofDetected`).
        case tellPlannerSpoofed
        /// Tell the dial target which key its address proved (`DialPlanner.provedIdentity`).
        case tellPlannerProvedIdentity
        /// Ask the trust decision, then call `trustJudged`.
        case judgeTrust
        /// Ask the session table (tie-break, caps), then call `tableDecided`.
        case establish
        /// The connection carries the peer's session now: start gossip, the pumps, room sync.
        case startSession
    }

    enum State: Sendable, Equatable {
        case handshook, awaitingTrust, awaitingTable, done
    }

    private(set) var state: State = .handshook

    public init() {}

    /// Step 1: the handshake finished.
    public mutating func handshakeFinished(_ facts: Facts) -> [Action] {
        guard state == .handshook else { return [] }
        if facts.stopping { return refuse(.stopping) }
        // Before the trust decision: a refused stranger's key is not pinned.
        guard facts.wouldAdmit else { return refuse(.sessionLimit) }
        if case .spoofed(let claimed) = facts.advertised {
            state = .done
            return [.refuse(.spoofed(claimed: claimed))] + (facts.dialled ? [.tellPlannerSpoofed] : [])
        }
        state = .awaitingTrust
        return (facts.dialled ? [.tellPlannerProvedIdentity] : []) + [.judgeTrust]
    }

    /// Step 2: the trust decision's outcome; `refusal` nil keeps the connection.
    public mutating func trustJudged(refusal: (reason: CloseReason, text: String)?) -> [Action] {
        guard state == .awaitingTrust else { return [] }
        if let refusal { return refuse(.trust(refusal.reason, refusal.text)) }
        state = .awaitingTable
        return [.establish]
    }

    /// Step 3: whether the session table kept this connection as the peer's session (a
    /// connection it did not keep was closed by the table's own actions: a duplicate, or
    /// over a cap).
    public mutating func tableDecided(kept: Bool) -> [Action] {
        guard state == .awaitingTable else { return [] }
        state = .done
        return kept ? [.startSession] : []
    }

    private mutating func refuse(_ refusal: Refusal) -> [Action] {
        state = .done
        return [.refuse(refusal)]
    }
}

/// Why a dialled connection closed without a session, in words for the user who waited on
/// it (`parley connect --wait`), and whether the peer's trust refused us (then the redial
/// backs off harder, `DialPlanner.refusedByPeerTrust`).
public enum DialAttemptEnd: Sendable, Equatable {
    /// `peerClose`: the reason in the peer's close record, if it sent one; `handshook`:
    /// whether the handshake had finished; `error`: what closed the connection, if any.
    public static func describe(
        peerClose: CloseReason?, handshook: Bool, error: String?, address: String
    ) -> String {
        switch peerClose {
        case .keyChangePending?:
            return "\(address) refused us: it holds a key change for this node that its user has not accepted"
        case .notTrusted?:
            return "\(address) refused us: it does not trust this node (blocked, or a name clash)"
        case .duplicate?:
            return "\(address) kept another session with this node"
        default:
            break
        }
        if !handshook {
            let detail = error.map { ": \($0)" } ?? ""
            return
                "the handshake with \(address) failed\(detail) (is it a parleyd of the same network key and version?)"
        }
        return "the session with \(address) closed before it was kept\(error.map { ": \($0)" } ?? "")"
    }

    /// The peer refused us by its trust policy.
    public static func refusedByTrust(_ peerClose: CloseReason?) -> Bool {
        peerClose == .keyChangePending || peerClose == .notTrusted
    }
}
