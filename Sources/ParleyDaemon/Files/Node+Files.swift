import Foundation
import NIOCore
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// File transfers (issue 18, docs/PROTOCOL.md "Files"): the node routes the file records,
/// the session's start and end and the local calls to `FileDriver` (Drivers/FileDriver.swift
/// and Drivers/Files/), and is its host (`FileHost`): it answers the driver's questions
/// about sessions, rooms, the receive quota and the disk.
extension Node: FileHost {
    /// What the sender is told when this node cannot consult its store about an offer.
    static let offerStoreFailureReason = FileDriver.offerStoreFailureReason
    /// Refused offers kept per peer for the local user to see.
    static let maxRefusedOffersKeptPerPeer = FileDriver.maxRefusedOffersKeptPerPeer
    /// Offers from one peer waiting for the local user (`FileOfferRefusal`).
    static let maxWaitingOffersPerPeer = FileOfferRefusal.maxWaitingOffersPerPeer

    /// Where received files go: `download_dir`, else `<state-dir>/files`.
    var downloadDirectory: String {
        if let d = options.downloadDirectory { return d }
        if let s = ownIdentity.stateDirectory { return s + "/files" }
        return NSTemporaryDirectory() + "parley-files"
    }

    /// Creates the download directory (0700) on first use.
    func ensureDownloadDirectory() throws(FileError) { try fileDriver.ensureDownloadDirectory(downloadDirectory) }

    var fileAcceptPolicy: FileAcceptPolicy {
        FileAcceptPolicy(autoAcceptBytes: options.fileAutoAcceptBytes, quota: options.quota)
    }

    // MARK: Routing

    /// A session came up: `FileDriver.sessionStarted`.
    func filesSessionStarted(_ conn: PeerConnection) { fileDriver.sessionStarted(conn) }

    /// A session ended: nothing more is sent until the next `fileWant`.
    func filesSessionEnded(_ conn: PeerConnection) {
        guard let peer = conn.remoteIdentityKey else { return }
        fileDriver.sessionEnded(peer: peer, connection: ObjectIdentifier(conn))
    }

    func connection(_ conn: PeerConnection, receivedFile record: FileRecord) { fileDriver.received(record, on: conn) }

    func findTransfer(_ prefix: String) throws(FileError) -> FileTransferRecord {
        try fileDriver.findTransfer(prefix)
    }

    /// The current record (in memory if the transfer is running, else the store's).
    func currentRecord(_ rec: FileTransferRecord) -> (FileTransferRecord, UInt64?) { fileDriver.current(rec) }

    func acceptFile(_ prefix: String) throws(FileError) -> FileTransferRecord { try fileDriver.accept(prefix) }
    func rejectFile(_ prefix: String) throws(FileError) -> FileTransferRecord { try fileDriver.reject(prefix) }
    func cancelFile(_ prefix: String) throws(FileError) -> FileTransferRecord { try fileDriver.cancel(prefix) }

    /// `files.open` (descriptor socket): a completed incoming file, opened read-only by the
    /// daemon from its own download directory and handed to the asking client, which writes
    /// it where the person wants with the person's rights (issue 28).
    func openReceivedFile(_ prefix: String) throws(FileError) -> (FileTransferRecord, Int32, Int) {
        try fileDriver.open(prefix)
    }

    func emitFile(_ rec: FileTransferRecord, _ kind: FileEventKind, rate: UInt64? = nil) {
        fileDriver.emitFile(rec, kind, rate: rate)
    }

    // MARK: FileHost

    func filePeer(of link: any FileLink) -> IdentityPublicKey? {
        guard let conn = link as? PeerConnection else { return nil }
        return activePeer(of: conn)
    }

    func fileLink(for peer: IdentityPublicKey) -> (any FileLink)? { activeConnection(for: peer) }

    func roomMembership(of peer: IdentityPublicKey, in room: RoomID) throws(StoreError) -> Bool {
        try store.room(id: room)?.members.contains(peer) ?? false
    }

    /// A joined member's, as for room messages (`RoomDistribution.messageVerdict`): an
    /// invitee that has not joined is in `members` but sends nothing into the room.
    func roomAdmitsOffer(from peer: IdentityPublicKey, in room: RoomID) throws(StoreError) -> Bool {
        guard let record = try store.room(id: room) else { return false }
        return record.isMember && record.joined.contains(peer)
    }

    func senderVerified(_ peer: IdentityPublicKey) -> Bool { peerRecord(peer)?.trust == .verified }

    /// The receive quota's counts (messages cached as they are stored, file bytes counted).
    func receiveUsage(of peer: IdentityPublicKey) throws(StoreError)
        -> (peer: ReceiveQuota.Usage, total: ReceiveQuota.Usage)
    {
        let quota = messageDriver.quota
        let messages = try quota.usage(of: peer)
        let files = try quota.fileBytes(of: peer)
        return (
            ReceiveQuota.Usage(messages: messages.peer.messages, bytes: messages.peer.bytes + files.peer),
            ReceiveQuota.Usage(messages: messages.total.messages, bytes: messages.total.bytes + files.total)
        )
    }

    func freeBytes(at directory: String) -> Int? {
        var s = statvfs()
        var dir = directory
        // The download directory may not exist yet: measure the nearest existing parent.
        while statvfs(dir, &s) != 0 {
            guard let slash = dir.lastIndex(of: "/"), slash != dir.startIndex else { return freeDiskBytes() }
            dir = String(dir[..<slash])
        }
        return Int(clamping: UInt64(s.f_bavail) &* UInt64(s.f_frsize))
    }

    var fileStateDirectory: String? { ownIdentity.stateDirectory }

    var fileSettings: FileDriver.Settings {
        FileDriver.Settings(
            inlineDigestBytes: options.fileInlineDigestBytes, diskWorkInline: options.fileDiskWorkInline)
    }
}
