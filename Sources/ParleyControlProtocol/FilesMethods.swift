/// `files.*`: sending and receiving files (docs/CONTROL.md "Files", docs/PROTOCOL.md "Files").

/// One transfer as a client sees it.
public struct FileTransferInfo: Codable, Sendable, Hashable {
    /// The transfer id (32 hex digits); commands take any unique prefix of 4 or more.
    public var id: String
    /// "in" (offered to us) or "out" (ours).
    public var direction: String
    /// The other side's fingerprint and name.
    public var peer: String
    public var peerName: String
    /// The room (`#name`'s id) the file was sent to, if any.
    public var room: String?
    /// The file's name (incoming: sanitized, as it is or will be saved).
    public var name: String
    public var size: Int
    public var mediaType: String
    public var caption: String?
    /// offered, transferring, completed, rejected, cancelled, failed.
    public var state: String
    /// Bytes verified at the receiver (incoming: ours; outgoing: what the receiver confirmed).
    public var bytesDone: Int
    /// Bytes per second over the last half second, while transferring.
    public var rate: Int?
    /// Where the received file is (completed incoming transfers).
    public var path: String?
    /// Why it failed (failed transfers), or the peer's reason.
    public var error: String?
    /// BLAKE2b-256 of the whole file, hex.
    public var contentHash: String
    public var createdAt: Int
    public var updatedAt: Int
    /// Size of the offer's thumbnail in bytes (absent when the offer had none); the bytes
    /// come from `files.thumbnail`.
    public var thumbnailBytes: Int?

    public init(
        id: String, direction: String, peer: String, peerName: String, room: String?, name: String, size: Int,
        mediaType: String, caption: String?, state: String, bytesDone: Int, rate: Int?, path: String?,
        error: String?, contentHash: String, createdAt: Int, updatedAt: Int, thumbnailBytes: Int? = nil
    ) {
        self.id = id
        self.direction = direction
        self.peer = peer
        self.peerName = peerName
        self.room = room
        self.name = name
        self.size = size
        self.mediaType = mediaType
        self.caption = caption
        self.state = state
        self.bytesDone = bytesDone
        self.rate = rate
        self.path = path
        self.error = error
        self.contentHash = contentHash
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.thumbnailBytes = thumbnailBytes
    }

    public var isFinal: Bool { !["offered", "transferring"].contains(state) }
}

/// Offers a file to a peer or to every member of a `#room`.
public struct FilesSendParams: ControlCallParams {
    public typealias ResultType = FilesSendResult
    public static let method = ControlMethod.filesSend
    public static let fieldNames = ["to", "path", "caption", "mediaType"]

    public var to: String
    /// Absolute path of the file, read by the daemon in place (it must stay unchanged until
    /// the transfer completes).
    public var path: String
    public var caption: String?
    public var mediaType: String?

    public init(to: String, path: String, caption: String? = nil, mediaType: String? = nil) {
        self.to = to
        self.path = path
        self.caption = caption
        self.mediaType = mediaType
    }

    public func validate() throws(JSONRPCError) {
        try ParamCheck.peerSelector(to, field: "to")
        guard path.hasPrefix("/") else { throw .invalidParams("\"path\" must be an absolute path") }
        guard path.utf8.count <= ControlLimits.maxPathBytes, !path.utf8.contains(0) else {
            throw .invalidParams("\"path\" is longer than \(ControlLimits.maxPathBytes) bytes or contains NUL")
        }
        if let caption, caption.utf8.count > 4_096 { throw .invalidParams("\"caption\" is longer than 4096 bytes") }
        if let mediaType, mediaType.utf8.count > 127 || !mediaType.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
            throw .invalidParams("\"mediaType\" must be at most 127 printable ASCII characters")
        }
    }
}

public struct FilesSendResult: Codable, Sendable, Hashable {
    /// One transfer per recipient (a room: one per member).
    public var transfers: [FileTransferInfo]
    public init(transfers: [FileTransferInfo]) { self.transfers = transfers }
}

/// Lists transfers, newest first.
public struct FilesListParams: ControlCallParams {
    public typealias ResultType = FilesListResult
    public static let method = ControlMethod.filesList
    public static let fieldNames = ["limit", "id"]
    /// At most this many (default 50, at most 1000).
    public var limit: Int?
    /// Only transfers whose id starts with this.
    public var id: String?
    public init(limit: Int? = nil, id: String? = nil) {
        self.limit = limit
        self.id = id
    }
    public func validate() throws(JSONRPCError) {
        if let limit, !(1...1_000).contains(limit) { throw .invalidParams("\"limit\" must be between 1 and 1000") }
        if let id { try FileIDCheck.check(id) }
    }
}

public struct FilesListResult: Codable, Sendable, Hashable {
    public var transfers: [FileTransferInfo]
    /// Where received files are saved.
    public var directory: String
    public init(transfers: [FileTransferInfo], directory: String) {
        self.transfers = transfers
        self.directory = directory
    }
}

/// `files.accept`, `files.reject`, `files.cancel`: one transfer by id (a unique prefix).
public struct FilesAcceptParams: ControlCallParams {
    public typealias ResultType = FileTransferResult
    public static let method = ControlMethod.filesAccept
    public static let fieldNames = ["id"]
    public var id: String
    public init(id: String) { self.id = id }
    public func validate() throws(JSONRPCError) { try FileIDCheck.check(id) }
}

public struct FilesRejectParams: ControlCallParams {
    public typealias ResultType = FileTransferResult
    public static let method = ControlMethod.filesReject
    public static let fieldNames = ["id"]
    public var id: String
    public init(id: String) { self.id = id }
    public func validate() throws(JSONRPCError) { try FileIDCheck.check(id) }
}

public struct FilesCancelParams: ControlCallParams {
    public typealias ResultType = FileTransferResult
    public static let method = ControlMethod.filesCancel
    public static let fieldNames = ["id"]
    public var id: String
    public init(id: String) { self.id = id }
    public func validate() throws(JSONRPCError) { try FileIDCheck.check(id) }
}

/// `files.thumbnail`: the thumbnail of an offer (incoming: the peer's; outgoing: ours).
public struct FilesThumbnailParams: ControlCallParams {
    public typealias ResultType = FilesThumbnailResult
    public static let method = ControlMethod.filesThumbnail
    public static let fieldNames = ["id"]
    public var id: String
    public init(id: String) { self.id = id }
    public func validate() throws(JSONRPCError) { try FileIDCheck.check(id) }
}

public struct FilesThumbnailResult: Codable, Sendable, Hashable {
    /// The whole transfer id.
    public var id: String
    /// "image/jpeg" or "image/png", from the bytes' magic numbers only (the daemon never
    /// decodes a thumbnail; a client that shows it decodes a peer's bytes).
    public var mediaType: String
    /// Base64 of the thumbnail (at most 32,768 bytes before encoding).
    public var data: String
    public init(id: String, mediaType: String, data: String) {
        self.id = id
        self.mediaType = mediaType
        self.data = data
    }
}

public struct FileTransferResult: Codable, Sendable, Hashable {
    public var transfer: FileTransferInfo
    public init(transfer: FileTransferInfo) { self.transfer = transfer }
}

enum FileIDCheck {
    static func check(_ id: String) throws(JSONRPCError) {
        guard (4...32).contains(id.utf8.count),
            id.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { throw .invalidParams("\"id\" must be 4 to 32 lowercase hex digits (a transfer id or its prefix)") }
    }
}

// MARK: Events

/// `file.offered`, `file.progress`, `file.completed`, `file.failed`, `file.cancelled`: each
/// carries the transfer as it is now (`progress`: with `bytesDone` and `rate`).
public struct FileOfferedEvent: ControlEventParams {
    public static let method = ControlEvent.fileOffered
    public var transfer: FileTransferInfo
    public init(transfer: FileTransferInfo) { self.transfer = transfer }
}

public struct FileProgressEvent: ControlEventParams {
    public static let method = ControlEvent.fileProgress
    public var transfer: FileTransferInfo
    public init(transfer: FileTransferInfo) { self.transfer = transfer }
}

public struct FileCompletedEvent: ControlEventParams {
    public static let method = ControlEvent.fileCompleted
    public var transfer: FileTransferInfo
    public init(transfer: FileTransferInfo) { self.transfer = transfer }
}

public struct FileFailedEvent: ControlEventParams {
    public static let method = ControlEvent.fileFailed
    public var transfer: FileTransferInfo
    public init(transfer: FileTransferInfo) { self.transfer = transfer }
}

public struct FileCancelledEvent: ControlEventParams {
    public static let method = ControlEvent.fileCancelled
    public var transfer: FileTransferInfo
    public init(transfer: FileTransferInfo) { self.transfer = transfer }
}
