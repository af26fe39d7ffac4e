import ParleyCore
import ParleyNodeCore
import ParleyStore

/// A transfer as the node knows it in memory: a pair of peer and transfer id (the receiver
/// keys on both; docs/PROTOCOL.md "Files").
struct FileKey: Hashable {
    let peer: IdentityPublicKey
    let transfer: TransferID
}

/// An outgoing transfer being served: its state machine, the chunk hashes it must match,
/// and the source file once a `fileWant` asked for data.
final class OutgoingFile {
    var record: FileTransferRecord
    var machine: OutgoingTransfer
    let hashes: [[UInt8]]
    var source: SourceFile?
    var rate = TransferRate()

    init(record: FileTransferRecord) {
        self.record = record
        self.hashes = record.chunkHashList ?? []
        self.machine = OutgoingTransfer(
            chunkCount: FileOffer.chunkCount(size: UInt64(record.size), chunkSize: UInt64(record.chunkSize)),
            confirmed: UInt64(max(0, record.verified)))
    }
}

/// An incoming transfer being received: its state machine, the partial file, and the
/// whole-file hash fed as chunks are written in order.
final class IncomingFile {
    var record: FileTransferRecord
    var machine: IncomingTransfer
    var partial: PartialFile?
    var wholeHash: FileHash?
    /// Chunks fed to `wholeHash` (from 0, in order).
    var hashedChunks: UInt64 = 0
    var rate = TransferRate()

    init(record: FileTransferRecord, offer: FileOffer) {
        self.record = record
        self.machine = IncomingTransfer(
            offer: offer, durable: UInt64(max(0, record.verified)), verifiedHashes: record.chunkHashList)
    }
}

/// The node's file transfers in memory (loaded from the store per peer at session start).
/// Node-owned; the node's event loop only.
struct FileBook {
    var outgoing: [FileKey: OutgoingFile] = [:]
    var incoming: [FileKey: IncomingFile] = [:]
    /// Connections with a file pump queued for the next loop turn.
    var pumpQueued: Set<ObjectIdentifier> = []
    /// The download directory, created on first use.
    var directoryReady = false
}

extension FileTransferRecord {
    /// The offer this record was made from (outgoing) or received as (incoming).
    var offer: FileOffer? {
        guard let t = TransferID(hex: transfer), contentHash.count == FileHash.length,
            listHash.count == FileHash.length
        else { return nil }
        return FileOffer(
            transfer: t, size: UInt64(max(0, size)), chunkSize: UInt32(clamping: chunkSize), contentHash: contentHash,
            listHash: listHash, room: room.flatMap { RoomID(hex: $0) }, name: name, mediaType: mediaType,
            caption: caption, thumbnail: thumbnail)
    }

    var key: FileKey? {
        guard let p = IdentityPublicKey(hex: peer), let t = TransferID(hex: transfer) else { return nil }
        return FileKey(peer: p, transfer: t)
    }
}
