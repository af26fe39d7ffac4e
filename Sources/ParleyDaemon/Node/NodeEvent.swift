import ParleyCore
import ParleyStore

/// Something the node tells its observers (control-socket subscribers, the
/// notification hook, systemd status). Delivered on the node's event loop.
enum NodeEvent {
    case messageReceived(StoredMessage)
    /// The peer acknowledged our message (only what the mark changed: `DeliveredMessage`).
    case messageDelivered(DeliveredMessage)
    /// The recipient's read receipt for one of our messages arrived.
    case messageRead(StoredMessage)
    /// The recipient refused to store one of our messages (its quota or disk); it stays queued.
    case messageRefused(StoredMessage, RefusalReason)
    /// A message was edited, deleted for everyone, or its reactions changed (here or by the peer).
    case messageUpdated(StoredMessage)
    /// A peer's status line arrived or changed.
    case peerStatus(identity: IdentityPublicKey, status: String)
    case peerOnline(identity: IdentityPublicKey)
    case peerOffline(identity: IdentityPublicKey)
    /// A key never seen before connected: pinned on first use, or held for approval.
    /// `address`: where it connected from or was dialled.
    case newPeer(PeerRecord, address: String?)
    /// A room's name, members or version changed (or this node learned of the room).
    case roomUpdated(RoomRecord)
    /// A file transfer was offered (by us or to us), moved on, or ended (Files/).
    case file(FileTransferRecord, FileEventKind, rate: UInt64?)
}

/// Which `file.*` event a transfer change is.
enum FileEventKind: Sendable {
    case offered, progress, completed, failed, cancelled
}

protocol NodeObserver: AnyObject {
    func node(_ node: Node, didEmit event: NodeEvent)
}

/// An observer that keeps a journal of message events whose rows the message path writes
/// inside the message's own transaction (`MessageJournal`): the event of a stored message
/// commits with it, in one commit instead of two.
protocol InTransactionJournal: AnyObject {
    /// Called before a message transaction writes journal rows: stores the events the
    /// journal holds that have no id yet, so ids stay in the order events were emitted.
    func settleBeforeMessageTransaction()
}
