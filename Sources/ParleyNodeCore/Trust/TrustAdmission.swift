import ParleyCore

/// What the handshake's trust outcome does to the session: kept, or closed with the reason
/// and text the peer is told. Which text goes with which `TrustDecision` verdict lives here,
/// so the peer learns the same words whoever records the verdict. Pure.
public enum TrustAdmission: Sendable, Equatable {
    case keep
    case refuse(CloseReason, String)

    /// A new key held under the `hold` policy (`TrustDecision.Verdict.holdNewPeer`).
    public static let heldForApproval = TrustAdmission.refuse(.notTrusted, "awaiting approval")
    /// The store could not read or record the decision: refused, nothing decided on a guess.
    public static let storageFailure = TrustAdmission.refuse(.normal, "receiver storage failure")

    /// The session a refusal closes.
    public static func refusal(_ r: TrustDecision.Refusal) -> TrustAdmission {
        switch r {
        case .blocked: .refuse(.notTrusted, "blocked")
        case .awaitingApproval: heldForApproval
        case .replaced: .refuse(.notTrusted, "key was replaced")
        case .staleCard: .refuse(.notTrusted, "stale card")
        case .conflictingCard: .refuse(.notTrusted, "conflicting card")
        }
    }

    /// What the security log says of a refusal a hostile peer (or a former contact's
    /// retired key) can cause; nil for refusals a person chose (blocked, held).
    public static func securityNote(_ r: TrustDecision.Refusal) -> String? {
        switch r {
        case .blocked, .awaitingApproval: nil
        case .replaced: "a key a person replaced tried to connect"
        case .staleCard: "peer presented an older card than the one pinned; refused"
        case .conflictingCard: "two different cards with the same sequence; refused"
        }
    }
}
