import Foundation
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// File transfers (issue 18, docs/PROTOCOL.md "Files"), from `files.send` and a peer's
/// offer to the transfer's end. It owns what is in memory: the running transfers
/// (`FileBook`: each one's state machine, chunk hashes, source or partial file, rate),
/// loaded from the store when a session or a record needs one and dropped when it ends;
/// the connections with a file pump queued; the download directory's first-use check; and
/// the bound on refused offers listed per sender (`RefusalRecordLimit`). The decisions are
/// `OutgoingTransfer`, `IncomingTransfer`, `FileAcceptPolicy`, `FileOfferRefusal` and
/// `RoomFileAccess` (ParleyNodeCore/Files); this driver performs what they say:
///
/// - this file: sessions starting and ending, the peer's records routed, `fileEnd`;
/// - `Files/FileDriver+Sending.swift`: offers stored and served (`fileWant`, the pump);
/// - `Files/FileDriver+Receiving.swift`: offers judged, chunks written, checkpoints, the end;
/// - `Files/FileDriver+LocalAnswers.swift`: accept, reject, cancel, find, open.
///
/// It depends on `FileTransferStore` and `FileHost` (the node), never on `Node`. A store
/// failure is never swallowed: the peer is told (a refusal, an end with a reason, or the
/// session closed so the transfer resumes at the next one), or the local caller gets a
/// `FileError` saying what to do, and it is logged. Its state lives on the node's event
/// loop (the loop is its lock; the partial-file writer's callbacks come back on it, hence
/// `@unchecked Sendable`); time comes from the injected clock.
final class FileDriver: @unchecked Sendable {
    /// What the daemon's options say about disk work (inline in tests).
    struct Settings {
        /// Sources up to this size are hashed on the loop, larger ones on NIO's thread pool.
        var inlineDigestBytes: UInt64 = 4 << 20
        /// Received chunks are written and synced on the loop (tests) instead of a thread.
        var diskWorkInline = false
    }

    /// Chunks put on one connection per event-loop turn: 256 KiB, so a chat written
    /// meanwhile waits behind at most that (plus what the socket holds), never behind a file.
    static let chunksPerTurn = 4
    /// Refused offers kept per peer for the local user to see (`files.list`, `file.failed`):
    /// enough to explain what a real sender tried; a peer that keeps offering cannot grow
    /// the store past it (the oldest are deleted).
    static let maxRefusedOffersKeptPerPeer = 32
    /// What the sender is told when this node cannot consult its store about an offer (a
    /// count, a lookup): the offer is refused, never admitted on a count nobody could take,
    /// and the sender can send it again.
    static let offerStoreFailureReason = "the recipient could not check its storage; send the file again later"
    /// Why the driver closes a session whose file record it could not look up in the store:
    /// nothing is decided on a failed read; the peer resumes the transfer at the next session.
    static let storageFailureCloseText = "file storage failure"

    /// Only the file-transfer concern of the store.
    var store: any FileTransferStore
    let clock: any NodeClock
    /// The node (set once it is built; it owns this driver).
    weak var host: (any FileHost)?
    /// The running transfers, by peer and transfer id.
    var book = FileBook()
    /// How many refused offers per sender are written and announced.
    private var refusals = RefusalRecordLimit()

    init(store: any FileTransferStore, clock: any NodeClock) {
        self.store = store
        self.clock = clock
    }

    var nowMs: Int64 { clock.wallMilliseconds() }
    var log: Logger { host?.log ?? Logger(label: "parley.files") }

    // MARK: Transfers in memory

    /// In-memory runtime of an outgoing transfer, created from its record (given, or read
    /// from the store) when needed; a final one is not kept. Throws when the store cannot
    /// read it (never taken as "no such transfer").
    func outgoing(_ key: FileKey, _ rec: FileTransferRecord? = nil) throws(StoreError) -> OutgoingFile? {
        if let f = book.outgoing[key] { return f }
        var record = rec
        if record == nil { record = try store.transfer(peer: key.peer, transfer: key.transfer, direction: .outgoing) }
        guard let record else { return nil }
        return outgoing(record: record)
    }

    /// The runtime of the outgoing transfer `record` names (no store read).
    func outgoing(record: FileTransferRecord) -> OutgoingFile? {
        if let f = book.outgoing[record.key] { return f }
        guard record.direction == .outgoing else { return nil }
        let f = OutgoingFile(record: record)
        if !record.state.isFinal { book.outgoing[record.key] = f }
        return f
    }

    /// In-memory runtime of an incoming transfer that is transferring, created from its
    /// record (given, or read from the store) when needed. Throws like `outgoing`.
    func incoming(_ key: FileKey, _ rec: FileTransferRecord? = nil) throws(StoreError) -> IncomingFile? {
        if let f = book.incoming[key] { return f }
        var record = rec
        if record == nil { record = try store.transfer(peer: key.peer, transfer: key.transfer, direction: .incoming) }
        guard let record else { return nil }
        return incoming(record: record)
    }

    /// The runtime of the incoming transfer `record` names, if it is transferring (no store read).
    func incoming(record: FileTransferRecord) -> IncomingFile? {
        if let f = book.incoming[record.key] { return f }
        guard record.direction == .incoming, record.state == .transferring, let offer = record.offer else {
            return nil
        }
        let f = IncomingFile(record: record, offer: offer)
        book.incoming[record.key] = f
        return f
    }

    /// The current record (in memory if the transfer is running, else `rec`) and its rate
    /// while it transfers.
    func current(_ rec: FileTransferRecord) -> (FileTransferRecord, UInt64?) {
        let key = rec.key
        switch rec.direction {
        case .outgoing:
            if let f = book.outgoing[key] {
                return (f.record, f.record.state == .transferring ? f.rate.bytesPerSecond : nil)
            }
        case .incoming:
            if let f = book.incoming[key] {
                var r = f.record
                r.verified = max(r.verified, Int64(f.machine.nextIndex))
                return (r, r.state == .transferring ? f.rate.bytesPerSecond : nil)
            }
        }
        return (rec, nil)
    }

    /// Creates the download directory (0700) on first use; refuses one others could
    /// write to or swap (`DownloadDirectory.problem`).
    func ensureDownloadDirectory(_ dir: String) throws(FileError) {
        guard !book.directoryReady else { return }
        if let problem = DownloadDirectory.problem(dir) {
            throw .unsafeDownloadDirectory(problem)
        }
        do {
            try FileManager.default.createDirectory(
                atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .io(path: dir, operation: "cannot create the download directory", errno: EACCES)
        }
        book.directoryReady = true
    }

    /// An offer from `peer` was refused: whether it is listed (`RefusalRecordLimit`).
    func refusalListed(from peer: IdentityPublicKey) -> RefusalRecordLimit.Decision {
        refusals.refused(from: peer, now: clock.monotonicNow())
    }

    // MARK: Sessions

    /// A session came up: offers it has not answered go out again (a room file only to a
    /// peer still in the room, `RoomFileAccess`), and our accepted incoming transfers
    /// resume from their durable point.
    func sessionStarted(_ link: any FileLink) {
        guard let host, let peer = host.filePeer(of: link), link.remoteFeatures.contains(.files) else { return }
        let unfinished: [FileTransferRecord]
        do { unfinished = try store.unfinishedTransfers(with: peer) } catch {
            log.error(
                "could not read file transfers; they resume at the next session",
                ["peer": peer.fingerprintText, "error": "\(error)"])
            return
        }
        for rec in unfinished {
            let key = rec.key
            switch rec.direction {
            case .outgoing:
                guard let f = outgoing(record: rec) else { continue }
                f.machine.sessionEnded()
                guard rec.state == .offered, let offer = rec.offer else { continue }
                switch roomAccess(rec, peer: peer) {
                case .serve: link.send(.file(.offer(offer)))
                case .cancel(let reason):
                    // Removed before it answered: a file sent to the room is no longer for it.
                    link.send(.file(.end(key.transfer, .cancelled, reason)))
                    finishOutgoing(f, key, .cancelled, error: reason)
                case .hold: continue
                }
            case .incoming:
                guard rec.state == .transferring, let f = incoming(record: rec) else { continue }
                performIncoming(f.machine.start(), f, on: link)
            }
        }
    }

    /// Whether an outgoing room file still goes to `peer` (`RoomFileAccess`); a membership
    /// the store cannot tell is logged and held.
    func roomAccess(_ rec: FileTransferRecord, peer: IdentityPublicKey) -> RoomFileAccess.Verdict {
        let answered = rec.state != .offered
        var member: Bool?
        if let room = rec.room, RoomFileAccess.asksMembership(isRoomFile: true, answered: answered) {
            do { member = try host?.roomMembership(of: peer, in: room) } catch {
                log.error(
                    "could not read a room's members for one of its files; not sent until it can",
                    ["peer": peer.fingerprintText, "transfer": "\(rec.transfer)", "error": "\(error)"])
            }
        }
        return RoomFileAccess.outgoing(isRoomFile: rec.room != nil, answered: answered, isMember: member)
    }

    /// The session with `peer` on `link` ended: nothing more is sent until the next
    /// `fileWant`, and its queued pump is dropped.
    func sessionEnded(peer: IdentityPublicKey, connection: ObjectIdentifier) {
        for (key, f) in book.outgoing where key.peer == peer { f.machine.sessionEnded() }
        book.pumpQueued.remove(connection)
    }

    /// A store read for a peer's record failed: nothing is decided on it. The session is
    /// closed, so the peer's side resumes the transfer at the next session.
    func storageFailed(_ what: String, _ key: FileKey, _ error: StoreError, on link: any FileLink) {
        log.error(
            "could not read a file transfer for a peer's record; the session is closed and resumes later",
            ["what": what, "peer": key.peer.fingerprintText, "transfer": "\(key.transfer)", "error": "\(error)"])
        link.close(reason: .normal, text: Self.storageFailureCloseText)
    }

    // MARK: Records

    func received(_ record: FileRecord, on link: any FileLink) {
        guard let peer = host?.filePeer(of: link) else { return }
        let key = FileKey(peer: peer, transfer: record.transfer)
        switch record {
        case .offer(let offer):
            receivedOffer(offer, key: key, on: link)
        case let .want(_, from, needList):
            receivedWant(key, from: from, needList: needList, on: link)
        case let .have(_, verified):
            receivedHave(key, verified: verified, on: link)
        case let .hashes(_, first, hashes):
            let f: IncomingFile?
            do { f = try incoming(key) } catch { return storageFailed("fileHashes", key, error, on: link) }
            guard let f else { return }
            performIncoming(f.machine.receivedHashes(first: first, hashes), f, on: link)
        case let .chunk(_, index, data):
            let f: IncomingFile?
            do { f = try incoming(key) } catch { return storageFailed("fileChunk", key, error, on: link) }
            guard let f else { return }
            guard let actions = f.machine.receivedChunk(index: index, data: data) else {
                link.close(reason: .protocolError, text: "fileChunk \(index) does not fit its offer")
                return
            }
            performIncoming(actions, f, on: link)
        case let .end(_, outcome, text):
            receivedEnd(key, outcome: outcome, text: text, on: link)
        }
    }

    /// The peer ended one of our transfers, in either direction (ids are unique per pair:
    /// an offer that reuses one of our own ids is ignored, `receivedOffer`).
    private func receivedEnd(_ key: FileKey, outcome: FileEndOutcome, text: String, on link: any FileLink) {
        let out: OutgoingFile?
        var rec: FileTransferRecord?
        do throws(StoreError) {
            out = try outgoing(key)
            if out == nil {
                rec = book.incoming[key]?.record
                if rec == nil { rec = try store.transfer(peer: key.peer, transfer: key.transfer, direction: .incoming) }
            }
        } catch {
            return storageFailed("fileEnd", key, error, on: link)
        }
        if let f = out {
            guard !f.record.state.isFinal else { return }
            let state: FileTransferRecord.State
            switch outcome {
            case .completed: state = .completed
            case .rejected: state = .rejected
            case .cancelled: state = .cancelled
            case .failed: state = .failed
            }
            if state == .completed {
                recordingFailed("the final count", key, .outgoing) { () throws(StoreError) in
                    try store.setTransferVerified(rowID: f.record.rowID, Int64(f.machine.chunkCount), at: nowMs)
                }
                f.record.verified = Int64(f.machine.chunkCount)
            }
            finishOutgoing(f, key, state, error: outcome == .completed ? nil : Self.peerText(outcome, text))
            return
        }
        guard let rec, !rec.state.isFinal else { return }
        let state: FileTransferRecord.State = outcome == .cancelled ? .cancelled : .failed
        endIncoming(rec, key, state, error: Self.peerText(outcome, text))
    }

    static func peerText(_ outcome: FileEndOutcome, _ text: String) -> String {
        let cleaned = String(
            String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }))
        switch outcome {
        case .completed: return "completed"
        case .rejected: return "the recipient declined the file"
        case .cancelled: return "cancelled by the other side"
        case .failed: return "the other side says: " + (cleaned.isEmpty ? "failed" : cleaned)
        }
    }

    /// `fileEnd` for a transfer in a final state.
    static func endRecord(_ t: TransferID, _ rec: FileTransferRecord) -> AppRecord {
        switch rec.state {
        case .completed: return .file(.end(t, .completed, ""))
        case .rejected: return .file(.end(t, .rejected, ""))
        case .cancelled: return .file(.end(t, .cancelled, ""))
        default: return .file(.end(t, .failed, rec.error ?? "failed"))
        }
    }

    // MARK: Events and records

    func emitFile(_ rec: FileTransferRecord, _ kind: FileEventKind, rate: UInt64? = nil) {
        host?.emit(.file(rec, kind, rate: rate))
    }

    /// A transfer's progress or end the store could not record: logged, never silent. What
    /// the store holds stays consistent: counts only ever lag behind the disk (a resume
    /// then starts earlier), and a transfer whose end was not recorded is still open there
    /// (the next session offers or resumes it, the other side answers with its end, and the
    /// end is recorded again). Returns whether it was recorded.
    @discardableResult
    func recordingFailed(
        _ what: String, _ key: FileKey, _ direction: FileTransferRecord.Direction,
        _ write: () throws(StoreError) -> Void
    ) -> Bool {
        do { try write() } catch {
            log.error(
                direction == .incoming
                    ? "could not record an incoming transfer's progress"
                    : "could not record an outgoing transfer's progress",
                ["what": what, "peer": key.peer.fingerprintText, "transfer": "\(key.transfer)", "error": "\(error)"])
            return false
        }
        return true
    }
}
