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

/// Offers files to a peer or to every member of a `#room`. Only on the descriptor socket
/// (docs/CONTROL.md "Descriptor socket"): the request line carries one open descriptor per
/// entry of `files`, in order, which the client opened with its own rights. The daemon
/// never opens a path a client names (issue 28: a caller could make it read what only the
/// daemon may read). All or nothing: every descriptor is checked and copied into the
/// daemon's state before any offer is stored.
public struct FilesSendParams: ControlCallParams {
    public typealias ResultType = FilesSendResult
    public static let method = ControlMethod.filesSend
    public static let fieldNames = ["to", "files", "caption"]

    public var to: String
    /// One entry per descriptor, in the order the descriptors were attached.
    public var files: [FileAttachment]
    public var caption: String?

    public init(to: String, files: [FileAttachment], caption: String? = nil) {
        self.to = to
        self.files = files
        self.caption = caption
    }

    public func validate() throws(JSONRPCError) {
        try ParamCheck.peerSelector(to, field: "to")
        guard (1...DescriptorRights.maxDescriptorsPerMessage).contains(files.count) else {
            throw .invalidParams("\"files\" must list 1 to \(DescriptorRights.maxDescriptorsPerMessage) files")
        }
        for file in files { try file.validate() }
        if let caption, caption.utf8.count > 4_096 { throw .invalidParams("\"caption\" is longer than 4096 bytes") }
    }
}

/// What the daemon is told about one attached descriptor: the name to offer it under (the
/// file's own name, without its directory) and optionally its media type.
public struct FileAttachment: Codable, Sendable, Hashable {
    public var name: String
    public var mediaType: String?

    public init(name: String, mediaType: String? = nil) {
        self.name = name
        self.mediaType = mediaType
    }

    /// Longest name: a file name on Linux (NAME_MAX).
    public static let maxNameBytes = 255

    public func validate() throws(JSONRPCError) {
        guard !name.isEmpty, name.utf8.count <= Self.maxNameBytes, !name.utf8.contains(0), !name.contains("/") else {
            throw .invalidParams(
                "a file's \"name\" must be 1 to \(Self.maxNameBytes) bytes, without \"/\" or NUL (the name, not a path)"
            )
        }
        if let mediaType, mediaType.utf8.count > 127 || !mediaType.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
            throw .invalidParams("\"mediaType\" must be at most 127 printable ASCII characters")
        }
    }
}

/// `files.open`: a received file, handed over as a read-only descriptor attached to the
/// answer (descriptor socket only). The client writes it where the person wants, with the
/// person's own rights; the daemon never writes outside its own state.
public struct FilesOpenParams: ControlCallParams {
    public typealias ResultType = FilesOpenResult
    public static let method = ControlMethod.filesOpen
    public static let fieldNames = ["id"]
    public var id: String
    public init(id: String) { self.id = id }
    public func validate() throws(JSONRPCError) { try FileIDCheck.check(id) }
}

public struct FilesOpenResult: Codable, Sendable, Hashable {
    /// The completed incoming transfer; its file is the one descriptor attached to the answer.
    public var transfer: FileTransferInfo
    /// The file's size when it was opened (equal to `transfer.size`).
    public var size: Int
    public init(transfer: FileTransferInfo, size: Int) {
        self.transfer = transfer
        self.size = size
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
