import Foundation
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Receiving files: offers judged (`FileOfferRefusal`, then `FileAcceptPolicy`), chunks
/// judged by `IncomingTransfer`, and what it says performed on the partial file and the
/// store.
extension FileDriver {
    func receivedOffer(_ offer: FileOffer, key: FileKey, on link: any FileLink) {
        let verdict: FileAcceptPolicy.Verdict
        do throws(StoreError) {
            // Ids are unique per pair in both directions: an offer reusing one of ours is a
            // confused or hostile sender; ignored, so `fileEnd` stays unambiguous.
            if book.outgoing[key] != nil { return }
            if try store.transfer(peer: key.peer, transfer: key.transfer, direction: .outgoing) != nil { return }
            if let existing = try store.transfer(peer: key.peer, transfer: key.transfer, direction: .incoming) {
                switch existing.state {
                case .offered: break
                case .transferring:
                    if let f = incoming(record: existing) { performIncoming(f.machine.start(), f, on: link) }
                default: link.send(Self.endRecord(key.transfer, existing))
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
            link.send(.file(.end(key.transfer, .failed, reason)))
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
            // Not kept: the sender is told, and can offer it again.
            log.error("could not store a file offer; refused", ["peer": key.peer.fingerprintText, "error": "\(error)"])
            link.send(.file(.end(key.transfer, .failed, Self.offerStoreFailureReason)))
            return
        }
        emitFile(stored, .offered)
        log.info(
            "file offered to us",
            ["peer": key.peer.fingerprintText, "size": "\(offer.size)", "accepted": "\(verdict == .accept)"])
        if verdict == .accept, let f = incoming(record: stored) {
            performIncoming(f.machine.start(), f, on: link)
        }
    }

    /// An offer refused at once (limits, room, flood, quota, disk floor) is listed at the
    /// receiver too, `failed` with the reason, so the local user learns what was not taken
    /// and why. Never a thumbnail or a caption from it: only what names the file.
    private func recordRefusedOffer(_ offer: FileOffer, key: FileKey, reason: String) {
        // Bounded in time as well as in rows: a flood of refused offers is answered
        // (`fileEnd` above) but listed only at `RefusalRecordLimit`'s rate.
        switch refusalListed(from: key.peer) {
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

    /// Why a well-formed offer is refused before policy (`FileOfferRefusal`). Throws when
    /// the store cannot tell (the caller refuses: an unknown is never a yes).
    private func refusal(of offer: FileOffer, from peer: IdentityPublicKey) throws(StoreError) -> String? {
        var senderInRoom: Bool?
        if let room = offer.room {
            guard let host else { return FileOfferRefusal.notRoomMember }
            senderInRoom = try host.roomAdmitsOffer(from: peer, in: room)
        }
        let waiting = try store.unfinishedTransfers(with: peer).filter {
            $0.direction == .incoming && $0.state == .offered
        }
        let standing = host?.quotaStanding(of: peer) ?? .stranger
        return FileOfferRefusal.reason(
            for: offer, senderInRoom: senderInRoom, waitingOffers: waiting.count,
            waitingInAll: standing == .stranger ? try store.waitingIncomingOfferCount() : 0, sender: standing)
    }

    /// The policy's verdict with what is stored from the sender and the free space now.
    /// A count the store cannot give throws, and the caller must not read it as "nothing
    /// stored" (that would admit any file past the quota).
    func judge(size: UInt64, from peer: IdentityPublicKey, userAccepted: Bool) throws(StoreError)
        -> FileAcceptPolicy.Verdict
    {
        guard let host else { return .refuse(Self.offerStoreFailureReason) }
        let usage = try host.receiveUsage(of: peer)
        return host.fileAcceptPolicy.decide(
            size: size, senderVerified: host.senderVerified(peer), standing: host.quotaStanding(of: peer),
            userAccepted: userAccepted, peerUsage: usage.peer, totalUsage: usage.total,
            freeDiskBytes: host.freeBytes(at: host.downloadDirectory))
    }

    // MARK: Performing the state machine's actions

    func performIncoming(_ actions: [IncomingTransfer.Action], _ f: IncomingFile, on link: (any FileLink)?) {
        let key = f.record.key
        do throws(FileError) {
            for action in actions {
                switch action {
                case let .want(from, needList):
                    link?.send(.file(.want(key.transfer, from: from, needList: needList)))
                case .keepHashList(let hashes):
                    let all = hashes.flatMap { $0 }
                    // Not kept: a resume asks for the list again (`IncomingTransfer` starts
                    // without a verified list), so the transfer goes on.
                    recordingFailed("the chunk hash list", key, .incoming) { () throws(StoreError) in
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
                    link?.send(.file(.end(key.transfer, .failed, reason)))
                    finishIncoming(f, key, .failed, error: reason)
                }
            }
        } catch {
            failIncoming(f, key, error, on: link)
        }
    }

    /// The receiver could not write or sync: the sender is told (disk full or not), the
    /// transfer ends failed with the local error.
    private func failIncoming(_ f: IncomingFile, _ key: FileKey, _ error: FileError, on link: (any FileLink)?) {
        let reason: String
        if case let .io(_, _, code) = error, code == ENOSPC {
            reason = "the recipient's disk is full"
        } else {
            reason = "the recipient could not write the file"
        }
        log.error("file transfer failed", ["error": "\(error)"])
        link?.send(.file(.end(key.transfer, .failed, reason)))
        finishIncoming(f, key, .failed, error: "\(error)")
    }

    /// The partial file and its writer, created on the first chunk.
    private func writer(_ f: IncomingFile, _ key: FileKey) throws(FileError) -> PartialFileWriter {
        if let w = f.writer { return w }
        guard let host else { throw .io(path: "", operation: "the node is stopping", errno: ECANCELED) }
        try ensureDownloadDirectory(host.downloadDirectory)
        let p = try PartialFile(directory: host.downloadDirectory, transfer: key.transfer)
        let w = PartialFileWriter(
            partial: p, chunkSize: UInt64(f.record.chunkSize), loop: host.loop,
            inline: host.fileSettings.diskWorkInline)
        f.writer = w
        return w
    }

    /// A checkpoint's sync is done: record the count, tell the sender (on the session up now).
    private func checkpointDurable(_ key: FileKey, verified: UInt64, error: FileError?) {
        guard let f = book.incoming[key] else { return }
        let link = host?.fileLink(for: key.peer)
        if let error {
            failIncoming(f, key, error, on: link)
            return
        }
        // Not kept: the stored count lags behind the disk, so a resume starts earlier (the
        // data before it is synced either way); the transfer goes on.
        recordingFailed("a checkpoint", key, .incoming) { () throws(StoreError) in
            try store.setTransferVerified(rowID: f.record.rowID, Int64(verified), at: nowMs)
        }
        f.record.verified = max(f.record.verified, Int64(verified))
        f.machine.checkpointed(verified)
        link?.send(.file(.have(key.transfer, verified: verified)))
    }

    /// Every chunk was verified and written: the writer made the file durable and moved it
    /// into place. Tell the sender.
    private func finishedWriting(_ key: FileKey, count: UInt64, _ outcome: PartialFileWriter.Outcome) {
        guard let f = book.incoming[key] else { return }
        let link = host?.fileLink(for: key.peer)
        switch outcome {
        case .saved(let path):
            f.writer = nil  // the partial file is now the saved file: nothing to discard
            recordingFailed("the final count", key, .incoming) { () throws(StoreError) in
                try store.setTransferVerified(rowID: f.record.rowID, Int64(count), at: nowMs)
            }
            f.record.verified = Int64(count)
            f.record.savedPath = path
            link?.send(.file(.end(key.transfer, .completed, "")))
            finishIncoming(f, key, .completed, error: nil)
        case .failed(let error):
            failIncoming(f, key, error, on: link)
        }
    }

    /// Records the end of an incoming transfer; a partial file left is deleted.
    func finishIncoming(_ f: IncomingFile, _ key: FileKey, _ state: FileTransferRecord.State, error: String?) {
        f.machine.end()
        if state != .completed { f.writer?.discard() }
        f.writer = nil
        if state != .completed, let dir = host?.downloadDirectory {
            unlink(dir + "/" + PartialFile.name(for: key.transfer))
        }
        f.record.state = state
        f.record.error = error
        f.record.updatedAt = nowMs
        recordingFailed("its end (\(state.rawValue))", key, .incoming) { () throws(StoreError) in
            try store.setTransferState(
                rowID: f.record.rowID, state, error: error, savedPath: f.record.savedPath, at: nowMs)
        }
        book.incoming[key] = nil
        emitFile(f.record, state == .completed ? .completed : state == .failed ? .failed : .cancelled)
        log.info("file transfer ended", ["state": state.rawValue, "peer": key.peer.fingerprintText])
    }

    /// Ends an incoming transfer whether it is running (partial file, runtime) or only
    /// offered; the record as it ended.
    @discardableResult
    func endIncoming(_ rec: FileTransferRecord, _ key: FileKey, _ state: FileTransferRecord.State, error: String?)
        -> FileTransferRecord
    {
        if let f = incoming(record: rec) {
            finishIncoming(f, key, state, error: error)
            return f.record
        }
        recordingFailed("its end (\(state.rawValue))", key, .incoming) { () throws(StoreError) in
            try store.setTransferState(rowID: rec.rowID, state, error: error, savedPath: nil, at: nowMs)
        }
        var r = rec
        r.state = state
        r.error = error
        r.updatedAt = nowMs
        emitFile(r, state == .failed ? .failed : .cancelled)
        return r
    }
}
