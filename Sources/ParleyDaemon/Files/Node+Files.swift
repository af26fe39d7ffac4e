import Foundation
import NIOCore
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// File transfers (issue 18, docs/PROTOCOL.md "Files"): the shared part of the routing. The
/// transfers in memory are `FileDriver`'s; the decisions are `OutgoingTransfer`,
/// `IncomingTransfer` and `FileAcceptPolicy` (ParleyNodeCore/Files); sending is
/// `Node+FileSending.swift`, receiving `Node+FileReceiving.swift`.
extension Node {
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

    // MARK: Sessions

    /// A session came up: offers it has not answered go out again, and our accepted
    /// incoming transfers resume from their durable point.
    func filesSessionStarted(_ conn: PeerConnection) {
        guard let peer = activePeer(of: conn), conn.remoteFeatures.contains(.files) else { return }
        let unfinished: [FileTransferRecord]
        do { unfinished = try store.unfinishedTransfers(with: peer) } catch {
            log.error("could not read file transfers", ["error": "\(error)"])
            return
        }
        for rec in unfinished {
            let key = rec.key
            switch rec.direction {
            case .outgoing:
                guard let f = outgoingFile(key, rec) else { continue }
                f.machine.sessionEnded()
                guard rec.state == .offered, let offer = rec.offer else { continue }
                if let room = rec.room, !isRoomMember(peer, room: room) {
                    // Removed before it answered: a file sent to the room is no longer for it.
                    conn.send(.file(.end(key.transfer, .cancelled, "no longer a member of the room")))
                    finishOutgoing(f, key, .cancelled, error: "no longer a member of the room")
                    continue
                }
                conn.send(.file(.offer(offer)))
            case .incoming:
                guard rec.state == .transferring, let f = incomingFile(key, rec) else { continue }
                performIncoming(f.machine.start(), f, on: conn)
            }
        }
    }

    /// Whether `peer` is (still) a member of the room `room` as this node resolved it.
    func isRoomMember(_ peer: IdentityPublicKey, room: RoomID) -> Bool {
        ((try? store.room(id: room)) ?? nil)?.members.contains(peer) ?? false
    }

    /// A session ended: nothing more is sent until the next `fileWant`.
    func filesSessionEnded(_ conn: PeerConnection) {
        guard let peer = conn.remoteIdentityKey else { return }
        fileDriver.sessionEnded(peer: peer, connection: ObjectIdentifier(conn))
    }

    // MARK: Records

    func connection(_ conn: PeerConnection, receivedFile record: FileRecord) {
        guard let peer = activePeer(of: conn) else { return }
        let key = FileKey(peer: peer, transfer: record.transfer)
        switch record {
        case .offer(let offer):
            receivedOffer(offer, key: key, on: conn)
        case let .want(_, from, needList):
            receivedWant(key, from: from, needList: needList, on: conn)
        case let .have(_, verified):
            receivedHave(key, verified: verified, on: conn)
        case let .hashes(_, first, hashes):
            guard let f = incomingFile(key) else { return }
            performIncoming(f.machine.receivedHashes(first: first, hashes), f, on: conn)
        case let .chunk(_, index, data):
            guard let f = incomingFile(key) else { return }
            guard let actions = f.machine.receivedChunk(index: index, data: data) else {
                conn.close(reason: .protocolError, text: "fileChunk \(index) does not fit its offer")
                return
            }
            performIncoming(actions, f, on: conn)
        case let .end(_, outcome, text):
            receivedEnd(key, outcome: outcome, text: text)
        }
    }

    /// The peer ended one of our transfers, in either direction (ids are unique per pair:
    /// an offer that reuses one of our own ids is ignored, `receivedOffer`).
    private func receivedEnd(_ key: FileKey, outcome: FileEndOutcome, text: String) {
        if let f = outgoingFile(key), !f.record.state.isFinal {
            let state: FileTransferRecord.State
            switch outcome {
            case .completed: state = .completed
            case .rejected: state = .rejected
            case .cancelled: state = .cancelled
            case .failed: state = .failed
            }
            if state == .completed {
                try? store.setTransferVerified(rowID: f.record.rowID, Int64(f.machine.chunkCount), at: nowMs)
                f.record.verified = Int64(f.machine.chunkCount)
            }
            finishOutgoing(f, key, state, error: outcome == .completed ? nil : Self.peerText(outcome, text))
            return
        }
        guard
            let rec = fileDriver.book.incoming[key]?.record
                ?? (try? store.transfer(peer: key.peer, transfer: key.transfer, direction: .incoming)),
            !rec.state.isFinal
        else { return }
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

    // MARK: Local API

    /// A transfer by id prefix, newest first; exactly one must match.
    func findTransfer(_ prefix: String) throws(FileError) -> FileTransferRecord {
        let found: [FileTransferRecord]
        do { found = try store.transfers(idPrefix: prefix, limit: 2) } catch { throw .storage(error) }
        guard let first = found.first else { throw .notFound(prefix) }
        guard found.count == 1 || first.transfer.hex == prefix else { throw .ambiguous(prefix, found.count) }
        return first
    }

    /// The current record (in memory if the transfer is running, else the store's).
    func currentRecord(_ rec: FileTransferRecord) -> (FileTransferRecord, UInt64?) { fileDriver.current(rec) }

    func cancelFile(_ prefix: String) throws(FileError) -> FileTransferRecord {
        let rec = try findTransfer(prefix)
        let key = rec.key
        guard !rec.state.isFinal else {
            throw .wrongState(id: rec.transfer.hex, state: rec.state.rawValue, wanted: "offered or transferring")
        }
        activeConnection(for: key.peer)?.send(.file(.end(key.transfer, .cancelled, "")))
        switch rec.direction {
        case .outgoing: if let f = outgoingFile(key, rec) { finishOutgoing(f, key, .cancelled, error: nil) }
        case .incoming: endIncoming(rec, key, .cancelled, error: nil)
        }
        return currentRecord(try findTransfer(rec.transfer.hex)).0
    }

    /// Ends an incoming transfer whether it is running (partial file, runtime) or only offered.
    func endIncoming(_ rec: FileTransferRecord, _ key: FileKey, _ state: FileTransferRecord.State, error: String?) {
        if let f = incomingFile(key, rec) {
            finishIncoming(f, key, state, error: error)
            return
        }
        recordingFailed("its end (\(state.rawValue))", key) { () throws(StoreError) in
            try store.setTransferState(rowID: rec.rowID, state, error: error, at: nowMs)
        }
        var r = rec
        r.state = state
        r.error = error
        r.updatedAt = nowMs
        emitFile(r, state == .failed ? .failed : .cancelled)
    }

    // MARK: Events

    func emitFile(_ rec: FileTransferRecord, _ kind: FileEventKind, rate: UInt64? = nil) {
        emit(.file(rec, kind, rate: rate))
    }

    /// In-memory runtime of an outgoing transfer, created from its record when needed.
    func outgoingFile(_ key: FileKey, _ rec: FileTransferRecord? = nil) -> OutgoingFile? {
        fileDriver.outgoing(key, rec)
    }

    /// In-memory runtime of an incoming transfer, created from its record when needed.
    func incomingFile(_ key: FileKey, _ rec: FileTransferRecord? = nil) -> IncomingFile? {
        fileDriver.incoming(key, rec)
    }
}
