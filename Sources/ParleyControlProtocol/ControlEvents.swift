/// Notifications the daemon sends to a connection after `messages.subscribe`.

/// Names of the notification methods.
public enum ControlEvent {
    public static let messageReceived = "message.received"
    public static let messageDelivered = "message.delivered"
    public static let messageRead = "message.read"
    /// The recipient refused to store one of our messages (its quota or disk); it stays queued.
    public static let messageRefused = "message.refused"
    public static let peerOnline = "peer.online"
    public static let peerOffline = "peer.offline"
    /// A key never seen before connected (pinned, or held for approval).
    public static let peerNew = "peer.new"
    public static let roomUpdated = "room.updated"
    /// File transfers (`FileEvent`): an offer arrived or was made, progress (at most twice a
    /// second), completed, failed, cancelled or rejected.
    public static let fileOffered = "file.offered"
    public static let fileProgress = "file.progress"
    public static let fileCompleted = "file.completed"
    public static let fileFailed = "file.failed"
    public static let fileCancelled = "file.cancelled"
    /// The last notification before the daemon ends a subscription (and the connection).
    public static let subscriptionClosed = "subscription.closed"

    /// The params member carrying an event's journal id (every notification but
    /// `subscription.closed`); the `since` of `messages.subscribe`.
    public static let eventIDKey = "eventId"

    public static let all: [String] = [
        messageReceived, messageDelivered, messageRead, peerOnline, peerOffline, peerNew, subscriptionClosed,
        roomUpdated, messageRefused, messageUpdated, peerStatus,
        fileOffered, fileProgress, fileCompleted, fileFailed, fileCancelled
    ]
}

/// The params of one notification, tied to its method name.
public protocol ControlEventParams: Codable, Sendable, Hashable {
    static var method: String { get }
}

/// A message arrived from a peer (already stored).
public struct MessageReceivedEvent: ControlEventParams {
    public static let method = ControlEvent.messageReceived
    public var message: MessageInfo

    public init(message: MessageInfo) { self.message = message }
}

/// A peer acknowledged one of our messages.
public struct MessageDeliveredEvent: ControlEventParams {
    public static let method = ControlEvent.messageDelivered
    /// The message's id (`MessageInfo.id`).
    public var id: String
    /// Recipient's fingerprint.
    public var to: String
    /// Unix time in milliseconds.
    public var deliveredAt: Int

    public init(id: String, to: String, deliveredAt: Int) {
        self.id = id
        self.to = to
        self.deliveredAt = deliveredAt
    }
}

/// The recipient read one of our messages (its read receipt arrived).
public struct MessageReadEvent: ControlEventParams {
    public static let method = ControlEvent.messageRead
    /// The message's id (`MessageInfo.id`).
    public var id: String
    /// Recipient's fingerprint.
    public var to: String
    /// Unix time in milliseconds (this node's clock, when the receipt arrived).
    public var readAt: Int

    public init(id: String, to: String, readAt: Int) {
        self.id = id
        self.to = to
        self.readAt = readAt
    }
}

/// The recipient refused to store one of our messages (docs/PROTOCOL.md "refused"). The
/// message stays queued and is offered again at the next session with the peer.
public struct MessageRefusedEvent: ControlEventParams {
    public static let method = ControlEvent.messageRefused
    /// The message's id (`MessageInfo.id`).
    public var id: String
    /// Recipient's fingerprint.
    public var to: String
    /// `peerQuota`, `nodeQuota`, `diskFull`, `strangersShare` or `unknown`.
    public var reason: String
    /// What the user is told, e.g. "the recipient's disk is nearly full".
    public var text: String
    /// Unix time in milliseconds (this node's clock, when the refusal arrived).
    public var refusedAt: Int

    public init(id: String, to: String, reason: String, text: String, refusedAt: Int) {
        self.id = id
        self.to = to
        self.reason = reason
        self.text = text
        self.refusedAt = refusedAt
    }
}

/// An authenticated session with the peer was established.
public struct PeerOnlineEvent: ControlEventParams {
    public static let method = ControlEvent.peerOnline
    public var peer: PeerInfo

    public init(peer: PeerInfo) { self.peer = peer }
}

/// The last session with the peer ended.
public struct PeerOfflineEvent: ControlEventParams {
    public static let method = ControlEvent.peerOffline
    public var peer: PeerInfo

    public init(peer: PeerInfo) { self.peer = peer }
}

/// A peer presented another identity key than the pinned one. Nothing is sent to it until
/// the user checks the new safety number and runs `trust.accept_change`.
public struct PeerNewEvent: ControlEventParams {
    public static let method = ControlEvent.peerNew
    /// What the new peer calls itself.
    public var name: String
    public var fingerprint: String
    /// `pinned` (trust on first use) or `pending` (held until a person accepts it).
    public var trust: PeerTrust
    /// Where it connected from or was dialled, if over the network.
    public var address: String?
    /// Safety number of our key and this new key.
    public var safetyNumber: String
    /// Set when its name looks like another peer's (or ours): compare fingerprints.
    public var nameClash: NameClashInfo?

    public init(
        name: String, fingerprint: String, trust: PeerTrust, address: String?, safetyNumber: String,
        nameClash: NameClashInfo?
    ) {
        self.name = name
        self.fingerprint = fingerprint
        self.trust = trust
        self.address = address
        self.safetyNumber = safetyNumber
        self.nameClash = nameClash
    }

    enum CodingKeys: String, CodingKey { case name, fingerprint, trust, address, safetyNumber, nameClash }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(fingerprint, forKey: .fingerprint)
        try c.encode(trust, forKey: .trust)
        try c.encode(address, forKey: .address)  // null, not absent, when nil
        try c.encode(safetyNumber, forKey: .safetyNumber)
        try c.encode(nameClash, forKey: .nameClash)
    }
}

/// The daemon ended the subscription and is about to close the connection: the
/// subscriber fell behind (`subscriberTooSlow`) or the daemon is shutting down.
public struct SubscriptionClosedEvent: ControlEventParams {
    public static let method = ControlEvent.subscriptionClosed
    /// A `ControlErrorCode` (`subscriberTooSlow`, or `internalError` at shutdown).
    public var code: Int
    public var message: String

    public init(code: Int, message: String) {
        self.code = code
        self.message = message
    }

    public static func tooSlow() -> SubscriptionClosedEvent {
        SubscriptionClosedEvent(
            code: ControlErrorCode.subscriberTooSlow.rawValue,
            message: "more than \(ControlLimits.maxSubscriptionBacklogNotifications) notifications or "
                + "\(ControlLimits.maxSubscriptionBacklogBytes) bytes unread; subscription closed")
    }
}

/// A received notification decoded into its typed event.
public enum ControlEventPayload: Sendable, Hashable {
    case messageReceived(MessageReceivedEvent)
    case messageDelivered(MessageDeliveredEvent)
    case messageRead(MessageReadEvent)
    case messageRefused(MessageRefusedEvent)
    case peerOnline(PeerOnlineEvent)
    case peerOffline(PeerOfflineEvent)
    case peerNew(PeerNewEvent)
    case subscriptionClosed(SubscriptionClosedEvent)
    case roomUpdated(RoomUpdatedEvent)
    case messageUpdated(MessageUpdatedEvent)
    case peerStatus(PeerStatusEvent)
    /// `file.offered`, `file.progress`, `file.completed`, `file.failed`, `file.cancelled`:
    /// the method and the transfer as it is now.
    case file(method: String, FileTransferInfo)
    /// A method this version does not know (a newer daemon): kept, not fatal.
    case unknown(JSONRPCNotification)

    /// Throws `DecodingError` if a known method has params of the wrong shape.
    public init(_ notification: JSONRPCNotification) throws {
        let params = JSONValue.object(notification.params ?? [:])
        switch notification.method {
        case ControlEvent.messageReceived: self = .messageReceived(try params.decode(as: MessageReceivedEvent.self))
        case ControlEvent.messageDelivered: self = .messageDelivered(try params.decode(as: MessageDeliveredEvent.self))
        case ControlEvent.messageRead: self = .messageRead(try params.decode(as: MessageReadEvent.self))
        case ControlEvent.messageRefused: self = .messageRefused(try params.decode(as: MessageRefusedEvent.self))
        case ControlEvent.peerOnline: self = .peerOnline(try params.decode(as: PeerOnlineEvent.self))
        case ControlEvent.peerOffline: self = .peerOffline(try params.decode(as: PeerOfflineEvent.self))
        case ControlEvent.peerNew: self = .peerNew(try params.decode(as: PeerNewEvent.self))
        case ControlEvent.subscriptionClosed:
            self = .subscriptionClosed(try params.decode(as: SubscriptionClosedEvent.self))
        case ControlEvent.roomUpdated: self = .roomUpdated(try params.decode(as: RoomUpdatedEvent.self))
        case ControlEvent.messageUpdated: self = .messageUpdated(try params.decode(as: MessageUpdatedEvent.self))
        case ControlEvent.peerStatus: self = .peerStatus(try params.decode(as: PeerStatusEvent.self))
        case ControlEvent.fileOffered, ControlEvent.fileProgress, ControlEvent.fileCompleted, ControlEvent.fileFailed,
            ControlEvent.fileCancelled:
            self = .file(method: notification.method, try params.decode(as: FileOfferedEvent.self).transfer)
        default: self = .unknown(notification)
        }
    }
}
