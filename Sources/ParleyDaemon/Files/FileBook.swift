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
    /// A chunk the receiver asked for again (it failed its hash there): checked against
    /// its hash when it is read back, before it is sent again.
    var recheckChunk: UInt64?

    init(record: FileTransferRecord) {
        self.record = record
        self.hashes = record.chunkHashList ?? []
        self.machine = OutgoingTransfer(
            chunkCount: FileOffer.chunkCount(size: UInt64(record.size), chunkSize: UInt64(record.chunkSize)),
            confirmed: UInt64(max(0, record.verified)))
    }
}

/// An incoming transfer being received: its state machine and, from the first chunk, the
/// writer of its partial file (which also keeps the whole-file hash).
final class IncomingFile {
    var record: FileTransferRecord
    var machine: IncomingTransfer
    var writer: PartialFileWriter?
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
        guard contentHash.count == FileHash.length, listHash.count == FileHash.length else { return nil }
        return FileOffer(
            transfer: transfer, size: UInt64(max(0, size)), chunkSize: UInt32(clamping: chunkSize),
            contentHash: contentHash, listHash: listHash, room: room, name: name, mediaType: mediaType,
            caption: caption, thumbnail: thumbnail)
    }

    var key: FileKey { FileKey(peer: peer, transfer: transfer) }
}
