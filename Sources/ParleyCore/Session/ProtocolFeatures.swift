/// Optional parts of the protocol a node understands, announced in its handshake payload
/// (field 0x10, `u32be` bit set). A sender uses an optional record only with a peer that
/// announced it; a node that predates a feature sends no such bit and is sent nothing it
/// would skip. Unknown bits are ignored.
public struct ProtocolFeatures: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Replies (0x09), edits (0x0A), deletes (0x0B), reactions (0x0C), status (0x0D) and the
    /// room variants (0x12-0x15).
    public static let conversation = ProtocolFeatures(rawValue: 1 << 0)

    /// File transfer: records 0x30-0x35 (docs/PROTOCOL.md "Files").
    public static let files = ProtocolFeatures(rawValue: 1 << 1)

    /// Signed address records (0x21), contact tags (0x22) and the dial-back probe
    /// (0x23, 0x24): address gossip among contacts (docs/PROTOCOL.md "Address gossip").
    public static let addressGossip = ProtocolFeatures(rawValue: 1 << 2)

    /// Room sync (issue 30): signed room messages (0x16) that any member passes on, and
    /// the summaries (0x17) members compare (docs/PROTOCOL.md "Room sync").
    public static let roomSync = ProtocolFeatures(rawValue: 1 << 3)

    /// Room cards (issue 30): members' signed cards passed on with a room's operations
    /// (0x18), so co-members who never met see each other's names (docs/PROTOCOL.md "Room
    /// cards").
    public static let roomCards = ProtocolFeatures(rawValue: 1 << 4)

    /// Operation summaries (issue 30): a room's operations go to a few members, which pass
    /// them on to a few more, and members compare the heads of their operation graphs
    /// (0x19) to fill the gaps, instead of every member sending every operation to every
    /// member (docs/PROTOCOL.md "Operation summaries").
    public static let roomOperationSummaries = ProtocolFeatures(rawValue: 1 << 5)

    /// Refused changes (issue 32): the node takes a `refused` record (0x07) that names its
    /// edits, deletes and reactions (0x0A ... 0x0C, 0x13 ... 0x15) or signed room changes
    /// (0x16 kinds 3 ... 5) as it takes one for chats: they stay queued and are not offered
    /// again on that session. A receiver over its quota refuses changes only to a peer
    /// that announced this; an older peer would resend a refused change at once, for as
    /// long as the session lasts, so to it they are acknowledged and dropped instead
    /// (docs/PROTOCOL.md "refused").
    public static let actionRefusals = ProtocolFeatures(rawValue: 1 << 6)

    /// Removal caps (issue 32): the node decodes a room remove (kind 3) that carries a
    /// `cap` after its target, and refuses the removed member's messages above it unless
    /// written after the removal (docs/PROTOCOL.md "Removal caps"). A node signs a capped
    /// remove only when every other member of the room is known to have announced this:
    /// an older node cannot decode one.
    public static let removalCaps = ProtocolFeatures(rawValue: 1 << 7)

    /// What this version understands.
    public static let supported: ProtocolFeatures = [
        .conversation, .files, .addressGossip, .roomSync, .roomCards, .roomOperationSummaries, .actionRefusals,
        .removalCaps
    ]
}

extension AppRecord.RecordType {
    /// The optional feature a record type belongs to; nil for the types every node knows.
    /// A receiver reads an optional type only from a peer that announced its feature, and
    /// skips it like an unknown type otherwise (`RecordStreamDecoder.peerFeatures`).
    public var feature: ProtocolFeatures? {
        switch self {
        case .reply, .edit, .delete, .reaction, .status, .roomReply, .roomEdit, .roomDelete, .roomReaction:
            return .conversation
        case .fileOffer, .fileWant, .fileHashes, .fileChunk, .fileHave, .fileEnd:
            return .files
        case .addressRecord, .contactTags, .dialBackRequest, .dialBackResult:
            return .addressGossip
        case .roomMessage, .roomHave:
            return .roomSync
        case .roomCard:
            return .roomCards
        case .roomOpsHave:
            return .roomOperationSummaries
        case .chat, .ack, .cardUpdate, .ping, .pong, .close, .refused, .readReceipt, .roomOperation, .roomChat,
            .listenPorts:
            return nil
        }
    }
}
