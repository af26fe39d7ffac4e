/// Which outbox an item in flight came from. All three are acknowledged by the same `ack`
/// record (docs/PROTOCOL.md), so the window remembers the lane to tell the driver which
/// store table an acknowledgement touches.
public enum OutboxLane: Sendable, Hashable {
    /// A direct chat message (the peer's own conversation).
    case direct
    /// A signed room membership operation (acknowledged by its hash's first 16 bytes).
    case roomOperation
    /// A message to a room, sent to this member over the pairwise session.
    case roomChat
    /// An edit, delete-for-everyone or reaction (its own id), sent once its target is
    /// delivered.
    case messageAction
}
