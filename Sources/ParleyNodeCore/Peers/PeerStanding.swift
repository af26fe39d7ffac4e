import ParleyCore

extension KnownPeer.Standing {
    /// A pinned record's standing for the trust decision, when several marks apply: a
    /// block wins over everything (a person refused the key), then a replacement (the
    /// contact moved to another key, even one that is still held), then a hold.
    public init(blocked: Bool, replaced: Bool, awaitingApproval: Bool) {
        if blocked {
            self = .blocked
        } else if replaced {
            self = .replaced
        } else if awaitingApproval {
            self = .awaitingApproval
        } else {
            self = .trusted
        }
    }
}

extension SessionTable.Standing {
    /// What a peer is to the session table's eviction order. Unknown keys and keys that are
    /// neither verified nor ever exchanged a message are strangers (minting them costs an
    /// attacker nothing). `exchangedMessages` is asked only when it matters; nil (the
    /// store could not say) counts as known, so a storage fault never evicts a contact.
    public static func of(
        pinned: Bool, verified: Bool, exchangedMessages: () -> Bool?
    ) -> Self {
        guard pinned else { return .stranger }
        if verified { return .known }
        return (exchangedMessages() ?? true) ? .known : .stranger
    }
}
