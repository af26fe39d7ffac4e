import ParleyCore

/// Whether local sends may be queued: the decision `send` makes before anything is
/// stored. Checked per item, in this order (the first that applies is the answer):
/// an empty body, a body over `WireLimits.maxBodyBytes`, a refusal of the recipient
/// (replaced, blocked, awaiting approval: the caller's own type, `Refusal`), and the
/// recipient's queue bound (`NodeLimits.maxQueuedPerPeer`). The bound counts what the
/// outbox holds (`OutboxLedger`) plus the items admitted earlier in the same batch, so
/// a pipelining client's batch cannot cross it by arriving in one read. Items refused
/// for any reason do not count. Pure: tested in `SendAdmissionTests`.
public struct SendAdmission<Refusal> {
    /// One local send: its recipient, its body's size in UTF-8 bytes, and why the
    /// recipient may not be written to now, if anything forbids it.
    public struct Item {
        public var peer: IdentityPublicKey
        public var bodyBytes: Int
        public var refusal: Refusal?

        public init(peer: IdentityPublicKey, bodyBytes: Int, refusal: Refusal?) {
            self.peer = peer
            self.bodyBytes = bodyBytes
            self.refusal = refusal
        }
    }

    public enum Verdict {
        case admitted
        case emptyBody
        /// The body's size in bytes (over `maxBodyBytes`).
        case bodyTooLarge(Int)
        case refused(Refusal)
        /// The recipient already has `limit` messages queued (counting this batch).
        case queueFull(limit: Int)
    }

    /// The verdict per item (same order), and how many were admitted per recipient.
    public struct Decision {
        public var verdicts: [Verdict]
        public var admittedPerPeer: [IdentityPublicKey: Int]
    }

    public var maxBodyBytes: Int
    public var maxQueuedPerPeer: Int

    public init(maxBodyBytes: Int = WireLimits.maxBodyBytes, maxQueuedPerPeer: Int = NodeLimits.maxQueuedPerPeer) {
        self.maxBodyBytes = maxBodyBytes
        self.maxQueuedPerPeer = maxQueuedPerPeer
    }

    /// Judges `items` in order against what `ledger` says is queued per recipient.
    public func judge(_ items: [Item], ledger: OutboxLedger) -> Decision {
        var verdicts: [Verdict] = []
        verdicts.reserveCapacity(items.count)
        var planned: [IdentityPublicKey: Int] = [:]
        for item in items {
            if item.bodyBytes <= 0 {
                verdicts.append(.emptyBody)
            } else if item.bodyBytes > maxBodyBytes {
                verdicts.append(.bodyTooLarge(item.bodyBytes))
            } else if let refusal = item.refusal {
                verdicts.append(.refused(refusal))
            } else if ledger.queuedCount(for: item.peer) + planned[item.peer, default: 0] >= maxQueuedPerPeer {
                verdicts.append(.queueFull(limit: maxQueuedPerPeer))
            } else {
                planned[item.peer, default: 0] += 1
                verdicts.append(.admitted)
            }
        }
        return Decision(verdicts: verdicts, admittedPerPeer: planned)
    }
}

extension SendAdmission: Sendable where Refusal: Sendable {}
extension SendAdmission.Item: Sendable where Refusal: Sendable {}
extension SendAdmission.Item: Equatable where Refusal: Equatable {}
extension SendAdmission.Verdict: Sendable where Refusal: Sendable {}
extension SendAdmission.Verdict: Equatable where Refusal: Equatable {}
extension SendAdmission.Decision: Sendable where Refusal: Sendable {}
extension SendAdmission.Decision: Equatable where Refusal: Equatable {}
