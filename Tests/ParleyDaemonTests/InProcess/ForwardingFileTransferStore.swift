import ParleyCore
import ParleyStore

@testable import ParleyDaemon

/// A test's stand-in between the file driver and a real store: every `FileTransferStore`
/// call goes to `inner` unless the stand-in implements it itself (to fail it, or count it).
/// Written once so that each stand-in holds only what it changes.
protocol ForwardingFileTransferStore: FileTransferStore {
    var inner: Store { get }
}

extension ForwardingFileTransferStore {
    func insertTransfer(_ t: FileTransferRecord) throws(StoreError) -> (record: FileTransferRecord, isNew: Bool) {
        try inner.insertTransfer(t)
    }
    func transfer(peer: IdentityPublicKey, transfer: TransferID, direction: FileTransferRecord.Direction)
        throws(StoreError) -> FileTransferRecord?
    {
        try inner.transfer(peer: peer, transfer: transfer, direction: direction)
    }
    func transfer(rowID: Int64) throws(StoreError) -> FileTransferRecord? { try inner.transfer(rowID: rowID) }
    func transfers(idPrefix prefix: String, limit: Int) throws(StoreError) -> [FileTransferRecord] {
        try inner.transfers(idPrefix: prefix, limit: limit)
    }
    func recentTransfers(limit: Int) throws(StoreError) -> [FileTransferRecord] {
        try inner.recentTransfers(limit: limit)
    }
    func unfinishedTransfers(with peer: IdentityPublicKey) throws(StoreError) -> [FileTransferRecord] {
        try inner.unfinishedTransfers(with: peer)
    }
    func waitingIncomingOfferCount() throws(StoreError) -> Int {
        try inner.waitingIncomingOfferCount()
    }
    func unfinishedOutgoingSourcePaths() throws(StoreError) -> Set<String> {
        try inner.unfinishedOutgoingSourcePaths()
    }
    func pruneRefusedOffers(from peer: IdentityPublicKey, keep: Int) throws(StoreError) -> Int {
        try inner.pruneRefusedOffers(from: peer, keep: keep)
    }
    func setTransferState(
        rowID: Int64, _ state: FileTransferRecord.State, error: String?, savedPath: String?, at: Int64
    ) throws(StoreError) {
        try inner.setTransferState(rowID: rowID, state, error: error, savedPath: savedPath, at: at)
    }
    func setTransferVerified(rowID: Int64, _ verified: Int64, at: Int64) throws(StoreError) {
        try inner.setTransferVerified(rowID: rowID, verified, at: at)
    }
    func setTransferChunkHashes(rowID: Int64, _ hashes: [UInt8]) throws(StoreError) {
        try inner.setTransferChunkHashes(rowID: rowID, hashes)
    }
    func incomingFileBytes(from peer: IdentityPublicKey?) throws(StoreError) -> Int {
        try inner.incomingFileBytes(from: peer)
    }
}
