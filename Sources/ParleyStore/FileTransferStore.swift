import ParleyCore

/// File transfers' metadata (the bytes live in files): the seam `FileDriver` depends on,
/// one small protocol per concern as libsignal's storage traits are. Keyed by the
/// transfer's typed keys (sender or recipient, `TransferID`, direction) or its row id.
/// The per-chunk writes (`setTransferVerified`) are called on the concrete `Store` by the
/// node's file code, so no chunk pays a dynamic dispatch; the driver reads through this
/// protocol only when a transfer is not already running in memory.
public protocol FileTransferStore: AnyObject {
    func insertTransfer(_ t: FileTransferRecord) throws(StoreError) -> (record: FileTransferRecord, isNew: Bool)
    func transfer(
        peer: IdentityPublicKey, transfer: TransferID, direction: FileTransferRecord.Direction
    ) throws(StoreError) -> FileTransferRecord?
    func transfer(rowID: Int64) throws(StoreError) -> FileTransferRecord?
    /// By the start of the id as a person types it (lowercase hex), newest first.
    func transfers(idPrefix prefix: String, limit: Int) throws(StoreError) -> [FileTransferRecord]
    func recentTransfers(limit: Int) throws(StoreError) -> [FileTransferRecord]
    func unfinishedTransfers(with peer: IdentityPublicKey) throws(StoreError) -> [FileTransferRecord]
    /// Incoming offers waiting for the local user's answer, from everyone.
    func waitingIncomingOfferCount() throws(StoreError) -> Int
    func unfinishedOutgoingSourcePaths() throws(StoreError) -> Set<String>
    @discardableResult
    func pruneRefusedOffers(from peer: IdentityPublicKey, keep: Int) throws(StoreError) -> Int
    func setTransferState(
        rowID: Int64, _ state: FileTransferRecord.State, error: String?, savedPath: String?, at: Int64
    ) throws(StoreError)
    func setTransferVerified(rowID: Int64, _ verified: Int64, at: Int64) throws(StoreError)
    func setTransferChunkHashes(rowID: Int64, _ hashes: [UInt8]) throws(StoreError)
    func incomingFileBytes(from peer: IdentityPublicKey?) throws(StoreError) -> Int
}

extension Store: FileTransferStore {}
