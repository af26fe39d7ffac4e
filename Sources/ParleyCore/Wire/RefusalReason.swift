/// Why a receiver did not store a chat: the `reason` of a `refused` record
/// (docs/PROTOCOL.md "refused"). The sender keeps the message queued and offers it again
/// at the next session.
public enum RefusalReason: UInt8, Sendable, Equatable, CaseIterable {
    /// The receiver keeps as much from this sender as it allows one peer (more once the
    /// receiver's user verified the sender or wrote to it; room again once the receiver's
    /// user deleted some of the conversation).
    case peerQuota = 1
    /// The receiver keeps as much as it allows from all peers together.
    case nodeQuota = 2
    /// The receiver's disk is nearly full.
    case diskFull = 3
    /// The receiver keeps no more from senders its user neither verified nor wrote to, for
    /// now: strangers together have a bounded share of its storage, disk and rate (so they
    /// cannot crowd out its contacts).
    case strangersShare = 4
    /// A reason this version does not know (a newer peer's): treated like `peerQuota`.
    case unknown = 255

    /// What the sender's user is told.
    public var description: String {
        switch self {
        case .peerQuota:
            return "the recipient keeps no more messages from you for now (its quota for you is full: "
                + "it takes more once its user verifies you or writes to you, or deletes old messages)"
        case .nodeQuota:
            return "the recipient keeps no more messages from anyone for now (its storage quota is full "
                + "until its user deletes old conversations)"
        case .diskFull: return "the recipient's disk is nearly full"
        case .strangersShare:
            return "the recipient keeps no more messages from people it does not know for now "
                + "(strangers together have a bounded share of its storage; it takes more later, "
                + "or once its user verifies you or writes to you)"
        case .unknown: return "the recipient refused to store it"
        }
    }
}
