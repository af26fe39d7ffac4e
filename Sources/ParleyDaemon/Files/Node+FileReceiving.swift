import Foundation
import NIOCore
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Receiving files: offers judged by `FileAcceptPolicy`, chunks judged by
/// `IncomingTransfer`, and what it says performed on the partial file and the store.
extension Node {
    /// Offers from one peer waiting for the local user: more are refused, so a peer cannot
    /// fill the store with offers nobody answers.
    static let maxWaitingOffersPerPeer = 64

    /// What the sender is told when this node cannot consult its store about an offer (a
    /// count, a lookup): the offer is refused, never admitted on a count nobody could take,
    /// and the sender can send it again.
    static let offerStoreFailureReason = "the recipient could not check its storage; send the file again later"

    func receivedOffer(_ offer: FileOffer, key: FileKey, on conn: PeerConnection) {
        let verdict: FileAcceptPolicy.Verdict
        do throws(StoreError) {
            // Ids are unique per pair in both directions: an offer reusing one of ours is a
            // confused or hostile sender; ignored, so `fileEnd` stays unambiguous.
            if fileDriver.book.outgoing[key] != nil { return }
            if try store.transfer(peer: key.peer, transfer: key.transfer, direction: .outgoing) != nil { return }
            if let existing = try store.transfer(peer: key.peer, transfer: key.transfer, direction: .incoming) {
                switch existing.state {
                case .offered: break
                case .transferring:
                    if let f = incomingFile(key, existing) { performIncoming(f.machine.start(), f, on: conn) }
                default: conn.send(Self.endRecord(key.transfer, existing))
                }
                return
            }
            if let reason = try refusal(of: offer, from: key.peer) {
                verdict = .refuse(reason)
            } else {
                verdict = try judge(size: offer.size, from: key.peer, userAccepted: false)
            }
        } catch {
            log.error(
                "could not check a file offer against the store; refused",
                ["peer": key.peer.fingerprintText, "error": "\(error)"])
            verdict = .refuse(Self.offerStoreFailureReason)
        }
        if case .refuse(let reason) = verdict {
            conn.send(.file(.end(key.transfer, .failed, reason)))
            recordRefusedOffer(offer, key: key, reason: reason)
            return
        }
        let now = nowMs
        let rec = FileTransferRecord(
            transfer: key.transfer, peer: key.peer, direction: .incoming, room: offer.room,
            name: FileName.sanitize(offer.name), size: Int64(offer.size), mediaType: offer.mediaType,
            caption: offer.caption, thumbnail: offer.thumbnail, chunkSize: Int64(offer.chunkSize),
            contentHash: offer.contentHash, listHash: offer.listHash, chunkHashes: nil,
            state: verdict == .accept ? .transferring : .offered, createdAt: now, updatedAt: now)
        let stored: FileTransferRecord
        do { stored = try store.insertTransfer(rec).record } catch {
            log.error("could not store a file offer", ["error": "\(error)"])
            return
        }
        emitFile(stored, .offered)
        log.info(
            "file offered to us",
            ["peer": key.peer.fingerprintText, "size": "\(offer.size)", "accepted": "\(verdict == .accept)"])
        if verdict == .accept, let f = incomingFile(key, stored) { performIncoming(f.machine.start(), f, on: conn) }
    }

    /// Refused offers kept per peer for the local user to see (`files.list`, `file.failed`):
    /// enough to explain what a real sender tried; a peer that keeps offering cannot grow
    /// the store past it (the oldest are deleted).
    static let maxRefusedOffersKeptPerPeer = 32

    /// An offer refused at once (limits, room, flood, quota, disk floor) is listed at the
    /// receiver too, `failed` with the reason, so the local user learns what was not taken
    /// and why. Never a thumbnail or a caption from it: only what names the file.
    private func recordRefusedOffer(_ offer: FileOffer, key: FileKey, reason: String) {
        // Bounded in time as well as in rows: a flood of refused offers is answered
        // (`fileEnd` above) but listed only at `RefusalRecordLimit`'s rate.
        switch fileDriver.refusalListed(from: key.peer) {
        case .record: break
        case .dropFirst:
            log.warning(
                "refused file offers from this peer arrive too fast: further refusals are answered but not listed",
                ["peer": key.peer.fingerprintText, "reason": reason])
            return
        case .drop: return
        }
        let now = nowMs
        let rec = FileTransferRecord(
            transfer: key.transfer, peer: key.peer, direction: .incoming, room: offer.room,
            name: FileName.sanitize(offer.name), size: Int64(clamping: offer.size), mediaType: offer.mediaType,
            caption: "", thumbnail: [], chunkSize: Int64(offer.chunkSize), contentHash: offer.contentHash,
            listHash: offer.listHash, chunkHashes: nil, state: .failed, error: reason, createdAt: now,
            updatedAt: now)
        do {
            let stored = try store.insertTransfer(rec)
            guard stored.isNew else { return }
            try store.pruneRefusedOffers(from: key.peer, keep: Self.maxRefusedOffersKeptPerPeer)
            emitFile(stored.record, .failed)
        } catch {
            log.error("could not record a refused file offer", ["error": "\(error)"])
        }
        // Debug level: a peer can offer as often as it likes (the listing above is bounded).
        log.debug("file offer refused", ["peer": key.peer.fingerprintText, "reason": reason])
    }

    /// Why a well-formed offer is refused before policy: limits, room membership, flood.
    /// Throws when the store cannot tell (the caller refuses: an unknown is never a yes).
    private func refusal(of offer: FileOffer, from peer: IdentityPublicKey) throws(StoreError) -> String? {
        if let problem = FileOffer.limitViolation(size: offer.size, chunkSize: offer.chunkSize) { return problem }
        if let problem = offer.hashViolation { return problem }
        if let room = offer.room {
            let record = try store.room(id: room)
            guard let record, record.isMember, record.members.contains(peer) else {
                return "not a member of that room"
            }
        }
        let waiting = try store.unfinishedTransfers(with: peer).filter {
            $0.direction == .incoming && $0.state == .offered
        }
        if waiting.count >= Self.maxWaitingOffersPerPeer { return "too many of your offers wait for an answer" }
        return nil
    }

    /// The policy's verdict with what is stored from the sender and the free space now.
    /// The counts are the receive quota's (messages cached as they are stored, file bytes
    /// counted); a count the store cannot give throws, and the caller must not read it as
    /// "nothing stored" (that would admit any file past the quota).
    func judge(size: UInt64, from peer: IdentityPublicKey, userAccepted: Bool) throws(StoreError)
        -> FileAcceptPolicy.Verdict
    {
        let verified = peerRecord(peer)?.trust == .verified
        let quota = messageDriver.quota
        let messages = try quota.usage(of: peer)
        let files = try quota.fileBytes(of: peer)
        return fileAcceptPolicy.decide(
            size: size, senderVerified: verified, standing: quotaStanding(of: peer), userAccepted: userAccepted,
            peerUsage: ReceiveQuota.Usage(messages: messages.peer.messages, bytes: messages.peer.bytes + files.peer),
            totalUsage: ReceiveQuota.Usage(
                messages: messages.total.messages, bytes: messages.total.bytes + files.total),
            freeDiskBytes: freeBytes(at: downloadDirectory))
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

    // MARK: Performing the state machine's actions

    func performIncoming(_ actions: [IncomingTransfer.Action], _ f: IncomingFile, on conn: PeerConnection?) {
        let key = f.record.key
        do throws(FileError) {
            for action in actions {
                switch action {
                case let .want(from, needList):
                    conn?.send(.file(.want(key.transfer, from: from, needList: needList)))
                case .keepHashList(let hashes):
                    let all = hashes.flatMap { $0 }
                    // Not kept: a resume asks for the list again (`IncomingTransfer` starts
                    // without a verified list), so the transfer goes on.
                    recordingFailed("the chunk hash list", key) { () throws(StoreError) in
                        try store.setTransferChunkHashes(rowID: f.record.rowID, all)
                    }
                    f.record.chunkHashes = all
                case let .write(offset, data):
                    try writer(f, key).write(data, index: offset / UInt64(f.record.chunkSize))
                    if f.rate.due(bytes: f.machine.verifiedBytes, now: clock.monotonicNow()) {
                        var r = f.record
                        r.verified = Int64(f.machine.nextIndex)
                        emitFile(r, .progress, rate: f.rate.bytesPerSecond)
                    }
                case .checkpoint(let verified):
                    // Data first (the writer's sync, after every write before it), then the
                    // count: a count never runs ahead of the disk.
                    try writer(f, key).sync { [weak self] error in
                        self?.checkpointDurable(key, verified: verified, error: error)
                    }
                case .finish:
                    let count = f.machine.chunkCount
                    try writer(f, key).finish(name: f.record.name) { [weak self] outcome in
                        self?.finishedWriting(key, count: count, outcome)
                    }
                case .fail(let reason):
                    conn?.send(.file(.end(key.transfer, .failed, reason)))
                    finishIncoming(f, key, .failed, error: reason)
                }
            }
        } catch {
            failIncoming(f, key, error, on: conn)
        }
    }

    /// The receiver could not write or sync: the sender is told (disk full or not), the
    /// transfer ends failed with the local error.
    private func failIncoming(_ f: IncomingFile, _ key: FileKey, _ error: FileError, on conn: PeerConnection?) {
        let reason: String
        if case let .io(_, _, code) = error, code == ENOSPC {
            reason = "the recipient's disk is full"
        } else {
            reason = "the recipient could not write the file"
        }
        log.error("file transfer failed", ["error": "\(error)"])
        conn?.send(.file(.end(key.transfer, .failed, reason)))
        finishIncoming(f, key, .failed, error: "\(error)")
    }

    /// The partial file and its writer, created on the first chunk.
    private func writer(_ f: IncomingFile, _ key: FileKey) throws(FileError) -> PartialFileWriter {
        if let w = f.writer { return w }
        try ensureDownloadDirectory()
        let p = try PartialFile(directory: downloadDirectory, transfer: key.transfer)
        let w = PartialFileWriter(
            partial: p, chunkSize: UInt64(f.record.chunkSize), loop: loop, inline: options.fileDiskWorkInline)
        f.writer = w
        return w
    }

    /// A checkpoint's sync is done: record the count, tell the sender (on the session up now).
    private func checkpointDurable(_ key: FileKey, verified: UInt64, error: FileError?) {
        guard let f = fileDriver.book.incoming[key] else { return }
        if let error {
            failIncoming(f, key, error, on: activeConnection(for: key.peer))
            return
        }
        // Not kept: the stored count lags behind the disk, so a resume starts earlier (the
        // data before it is synced either way); the transfer goes on.
        recordingFailed("a checkpoint", key) { () throws(StoreError) in
            try store.setTransferVerified(rowID: f.record.rowID, Int64(verified), at: nowMs)
        }
        f.record.verified = max(f.record.verified, Int64(verified))
        f.machine.checkpointed(verified)
        activeConnection(for: key.peer)?.send(.file(.have(key.transfer, verified: verified)))
    }

    /// Every chunk was verified and written: the writer made the file durable and moved it
    /// into place. Tell the sender.
    private func finishedWriting(_ key: FileKey, count: UInt64, _ outcome: PartialFileWriter.Outcome) {
        guard let f = fileDriver.book.incoming[key] else { return }
        let conn = activeConnection(for: key.peer)
        switch outcome {
        case .saved(let path):
            f.writer = nil  // the partial file is now the saved file: nothing to discard
            recordingFailed("the final count", key) { () throws(StoreError) in
                try store.setTransferVerified(rowID: f.record.rowID, Int64(count), at: nowMs)
            }
            f.record.verified = Int64(count)
            f.record.savedPath = path
            conn?.send(.file(.end(key.transfer, .completed, "")))
            finishIncoming(f, key, .completed, error: nil)
        case .failed(let error):
            failIncoming(f, key, error, on: conn)
        }
    }

    /// Records the end of an incoming transfer; a partial file left is deleted.
    func finishIncoming(_ f: IncomingFile, _ key: FileKey, _ state: FileTransferRecord.State, error: String?) {
        f.machine.end()
        if state != .completed { f.writer?.discard() }
        f.writer = nil
        if state != .completed { unlink(downloadDirectory + "/" + PartialFile.name(for: key.transfer)) }
        f.record.state = state
        f.record.error = error
        f.record.updatedAt = nowMs
        recordingFailed("its end (\(state.rawValue))", key) { () throws(StoreError) in
            try store.setTransferState(
                rowID: f.record.rowID, state, error: error, savedPath: f.record.savedPath, at: nowMs)
        }
        fileDriver.book.incoming[key] = nil
        emitFile(f.record, state == .completed ? .completed : state == .failed ? .failed : .cancelled)
        log.info("file transfer ended", ["state": state.rawValue, "peer": key.peer.fingerprintText])
    }

    /// A transfer's progress or end the store could not record: logged, never silent. What
    /// the store holds stays consistent: counts only ever lag behind the disk (a resume
    /// then starts earlier), and a transfer whose end was not recorded is still
    /// `transferring` there (the next session resumes it and ends it again).
    func recordingFailed(_ what: String, _ key: FileKey, _ write: () throws(StoreError) -> Void) {
        do { try write() } catch {
            log.error(
                "could not record an incoming transfer's progress",
                ["what": what, "peer": key.peer.fingerprintText, "transfer": "\(key.transfer)", "error": "\(error)"])
        }
    }

    // MARK: Local answers

    func acceptFile(_ prefix: String) throws(FileError) -> FileTransferRecord {
        let rec = try findTransfer(prefix)
        let key = rec.key
        guard rec.direction == .incoming, rec.state == .offered else {
            throw .wrongState(id: rec.transfer.hex, state: rec.state.rawValue, wanted: "an incoming offer")
        }
        // A count the store cannot give fails the accept (the offer stays offered; the user
        // can accept again): never a transfer admitted on an unknown count.
        let verdict: FileAcceptPolicy.Verdict
        do { verdict = try judge(size: UInt64(max(0, rec.size)), from: key.peer, userAccepted: true) } catch {
            throw .storage(error)
        }
        if case .refuse(let reason) = verdict {
            activeConnection(for: key.peer)?.send(.file(.end(key.transfer, .failed, reason)))
            recordingFailed("a refused accept", key) { () throws(StoreError) in
                try store.setTransferState(rowID: rec.rowID, .failed, error: reason, at: nowMs)
            }
            var failed = rec
            failed.state = .failed
            failed.error = reason
            emitFile(failed, .failed)
            return failed
        }
        do { try store.setTransferState(rowID: rec.rowID, .transferring, at: nowMs) } catch { throw .storage(error) }
        var accepted = rec
        accepted.state = .transferring
        if let f = incomingFile(key, accepted), let conn = activeConnection(for: key.peer) {
            performIncoming(f.machine.start(), f, on: conn)
        }
        return accepted
    }

    func rejectFile(_ prefix: String) throws(FileError) -> FileTransferRecord {
        let rec = try findTransfer(prefix)
        let key = rec.key
        guard rec.direction == .incoming, !rec.state.isFinal else {
            throw .wrongState(id: rec.transfer.hex, state: rec.state.rawValue, wanted: "an incoming offer")
        }
        activeConnection(for: key.peer)?.send(.file(.end(key.transfer, .rejected, "")))
        endIncoming(rec, key, .rejected, error: nil)
        return (try? findTransfer(rec.transfer.hex)) ?? rec
    }
}
