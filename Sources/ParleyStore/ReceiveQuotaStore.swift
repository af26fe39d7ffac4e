import ParleyCore

/// What the receive quota counts before it judges incoming chats and file offers (issue
/// 15): the seam `ReceiveQuotaDriver` depends on, one small protocol per concern as
/// libsignal's storage traits are. Keyed by the sender's typed key. A count that fails
/// throws: the node then defers what it was about to judge (it never reads a failed count
/// as "nothing stored", which would admit past the quota).
public protocol ReceiveQuotaStore: AnyObject {
    /// Messages and body bytes stored from one sender.
    func incomingUsage(from sender: IdentityPublicKey) throws(StoreError) -> (messages: Int, bytes: Int)
    /// Messages and body bytes stored from all senders together.
    func incomingUsageTotal() throws(StoreError) -> (messages: Int, bytes: Int)
    /// Messages and body bytes stored from all strangers together.
    func incomingUsageFromStrangers() throws(StoreError) -> (messages: Int, bytes: Int)
    /// Whether the local user ever wrote `peer` a direct message (a correspondent).
    func hasWritten(to peer: IdentityPublicKey) throws(StoreError) -> Bool
    /// File bytes taken in from `peer` (nil: from everyone).
    func incomingFileBytes(from peer: IdentityPublicKey?) throws(StoreError) -> Int
}

extension Store: ReceiveQuotaStore {}
