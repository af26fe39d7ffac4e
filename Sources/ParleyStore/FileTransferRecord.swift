import ParleyCore

/// One file transfer as the store keeps it (table `file_transfer`, migration `files-v1`).
/// The transfer id, peer and room are typed here; the table keeps them as lowercase hex,
/// converted inside the store (StoredKeys.swift).
public struct FileTransferRecord: Sendable, Equatable {
    public enum Direction: String, Sendable { case incoming = "in", outgoing = "out" }
    /// `offered`: waiting for an answer (incoming: the local user's; outgoing: the peer's).
    /// `transferring`: accepted, chunks moving (or waiting for a session).
    /// The rest are final.
    public enum State: String, Sendable, CaseIterable {
        case offered, transferring, completed, rejected, cancelled, failed
        public var isFinal: Bool { self != .offered && self != .transferring }
    }

    public var rowID: Int64
    public var transfer: TransferID
    public var peer: IdentityPublicKey
    public var direction: Direction
    public var room: RoomID?
    public var name: String
    public var size: Int64
    public var mediaType: String
    public var caption: String
    public var thumbnail: [UInt8]
    public var chunkSize: Int64
    public var contentHash: [UInt8]
    public var listHash: [UInt8]
    /// The verified chunk hashes, concatenated (32 bytes each); nil until known.
    public var chunkHashes: [UInt8]?
    public var state: State
    /// Chunks from 0 verified and durable at the receiver (incoming: ours; outgoing: the peer's fileHave).
    public var verified: Int64
    /// Outgoing: the source file as it was when offered.
    public var sourcePath: String?
    public var sourceSize: Int64?
    public var sourceMtime: Int64?
    /// Incoming: where the completed file was put.
    public var savedPath: String?
    public var error: String?
    public var createdAt: Int64
    public var updatedAt: Int64

    public init(
        rowID: Int64 = 0, transfer: TransferID, peer: IdentityPublicKey, direction: Direction, room: RoomID?,
        name: String,
        size: Int64, mediaType: String, caption: String, thumbnail: [UInt8], chunkSize: Int64, contentHash: [UInt8],
        listHash: [UInt8], chunkHashes: [UInt8]?, state: State, verified: Int64 = 0, sourcePath: String? = nil,
        sourceSize: Int64? = nil, sourceMtime: Int64? = nil, savedPath: String? = nil, error: String? = nil,
        createdAt: Int64, updatedAt: Int64
    ) {
        self.rowID = rowID
        self.transfer = transfer
        self.peer = peer
        self.direction = direction
        self.room = room
        self.name = name
        self.size = size
        self.mediaType = mediaType
        self.caption = caption
        self.thumbnail = thumbnail
        self.chunkSize = chunkSize
        self.contentHash = contentHash
        self.listHash = listHash
        self.chunkHashes = chunkHashes
        self.state = state
        self.verified = verified
        self.sourcePath = sourcePath
        self.sourceSize = sourceSize
        self.sourceMtime = sourceMtime
        self.savedPath = savedPath
        self.error = error
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The chunk hashes as a list of 32-byte hashes.
    public var chunkHashList: [[UInt8]]? {
        guard let all = chunkHashes, all.count % 32 == 0 else { return nil }
        return stride(from: 0, to: all.count, by: 32).map { Array(all[$0..<$0 + 32]) }
    }
}
