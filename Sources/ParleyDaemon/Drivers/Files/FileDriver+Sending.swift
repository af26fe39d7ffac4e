import Foundation
import NIOCore
import NIOPosix
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// One file to offer: the daemon's own copy (`OutgoingCopies`) and what to call it.
struct StagedOutgoingFile: Sendable {
    var copy: String
    var name: String
    var mediaType: String?
    /// The copy's digest, taken while it was made (`OutgoingCopies.copyAndDigest`); nil:
    /// hashed here from the copy.
    var digest: SourceFile.Digest? = nil
}

/// Sending files: `files.send` (hash the source once, store one transfer per recipient,
/// offer it), then serving the receiver's `fileWant`s: the hash list, then chunks read
/// from the source in place, each checked against its hash, paced by `pump`.
extension FileDriver {
    var copies: OutgoingCopies { OutgoingCopies(stateDirectory: host?.fileStateDirectory) }

    /// Hashes every staged copy, then stores and offers one transfer per file and
    /// recipient (the node resolved them): all of them, or, if any file fails, none (and
    /// every copy is removed).
    func send(
        _ staged: [StagedOutgoingFile], to recipients: [IdentityPublicKey], room: RoomID?, caption: String?
    ) throws -> EventLoopFuture<[FileTransferRecord]> {
        guard let host else {
            throw FileError.notSendable(path: staged.first?.name ?? "", reason: "parleyd is stopping; send it again")
        }
        let loop = host.loop
        let copies = self.copies
        let chunkSize = FileLimits.preferredChunkSize
        var prepared: [EventLoopFuture<(StagedOutgoingFile, SourceFile.Digest, [UInt8])>] = []
        for file in staged {
            let source: SourceFile
            do { source = try SourceFile(path: file.copy) } catch {
                for file in staged { copies.remove(file.copy) }
                throw error
            }
            let type = file.mediaType ?? MediaType.guess(file.name)
            let box = SourceBox(source)
            let digest: EventLoopFuture<SourceFile.Digest>
            if let d = file.digest, d.size == source.size, d.modified == source.modified {
                digest = loop.makeSucceededFuture(d)
            } else if source.size <= host.fileSettings.inlineDigestBytes {
                digest = loop.makeCompletedFuture { try box.source.digest(chunkSize: chunkSize) }
            } else {
                digest = NIOThreadPool.singleton.runIfActive(eventLoop: loop) {
                    try box.source.digest(chunkSize: chunkSize)
                }
            }
            let thumbnail = host.makeThumbnail(path: file.copy, mediaType: type, size: source.size)
            let typed = StagedOutgoingFile(copy: file.copy, name: file.name, mediaType: type)
            prepared.append(digest.and(thumbnail).map { (typed, $0.0, $0.1) })
        }
        return EventLoopFuture.whenAllSucceed(prepared, on: loop).flatMapErrorThrowing { error in
            for file in staged { copies.remove(file.copy) }
            throw error
        }.flatMapThrowing { files in
            var out: [FileTransferRecord] = []
            for (file, digest, thumbnail) in files {
                // One name per recipient, so each transfer removes its own when it ends.
                var paths = [file.copy]
                for _ in recipients.dropFirst() { paths.append(try copies.link(file.copy)) }
                out += try self.storeOffers(
                    digest, name: file.name, mediaType: file.mediaType ?? "application/octet-stream",
                    caption: caption ?? "", thumbnail: thumbnail, paths: paths, room: room,
                    recipients: recipients, chunkSize: chunkSize)
            }
            return out
        }
    }

    private func storeOffers(
        _ d: SourceFile.Digest, name: String, mediaType: String, caption: String, thumbnail: [UInt8],
        paths: [String], room: RoomID?, recipients: [IdentityPublicKey], chunkSize: Int
    ) throws -> [FileTransferRecord] {
        let now = nowMs
        var out: [FileTransferRecord] = []
        for (peer, path) in zip(recipients, paths) {
            let rec = FileTransferRecord(
                transfer: TransferID.random(), peer: peer, direction: .outgoing, room: room, name: name,
                size: Int64(d.size), mediaType: mediaType, caption: caption, thumbnail: thumbnail,
                chunkSize: Int64(chunkSize), contentHash: d.contentHash, listHash: d.listHash,
                chunkHashes: d.chunkHashes.flatMap { $0 }, state: .offered, sourcePath: path,
                sourceSize: Int64(d.size), sourceMtime: d.modified, createdAt: now, updatedAt: now)
            let stored: FileTransferRecord
            do { stored = try store.insertTransfer(rec).record } catch { throw FileError.storage(error) }
            out.append(stored)
            let key = stored.key
            book.outgoing[key] = OutgoingFile(record: stored)
            emitFile(stored, .offered)
            if let link = host?.fileLink(for: key.peer), link.remoteFeatures.contains(.files), let offer = stored.offer
            {
                link.send(.file(.offer(offer)))
            }
        }
        log.info("file offered", ["size": "\(d.size)", "recipients": "\(recipients.count)"])
        return out
    }

    // MARK: Serving

    /// The receiver's `fileWant`: accept, resume or re-fetch from `from`. An unanswered
    /// room offer is served only to a peer still in the room (`RoomFileAccess`).
    func receivedWant(_ key: FileKey, from: UInt64, needList: Bool, on link: any FileLink) {
        let found: OutgoingFile?
        do { found = try outgoing(key) } catch { return storageFailed("fileWant", key, error, on: link) }
        guard let f = found else {
            link.send(.file(.end(key.transfer, .failed, "unknown transfer")))
            return
        }
        guard !f.record.state.isFinal else {
            link.send(Self.endRecord(key.transfer, f.record))
            return
        }
        switch roomAccess(f.record, peer: key.peer) {
        case .serve: break
        case .cancel(let reason):
            // Removed from the room before it answered: the old offer is no way in.
            link.send(.file(.end(key.transfer, .cancelled, reason)))
            finishOutgoing(f, key, .cancelled, error: reason)
            return
        case .hold:
            link.close(reason: .normal, text: Self.storageFailureCloseText)
            return
        }
        // A want below what this session already sent is a re-fetch: the receiver found that
        // chunk bad. Read back from the source, it is checked against its hash before it goes
        // out again (the normal path checks the source's size and mtime instead, `pump`).
        if let sent = f.machine.next, from < sent { f.recheckChunk = from }
        do { try f.machine.want(from: from, needList: needList) } catch {
            link.close(reason: .protocolError, text: "fileWant from \(from) is past the end of the file")
            return
        }
        // Debug level: a receiver decides how often it asks, so an info line per want would
        // let a peer write the log at will.
        log.debug("file requested", ["from": "\(from)", "list": "\(needList)", "peer": key.peer.fingerprintText])
        if f.source == nil {
            // Only the daemon's own copy is ever opened (transfers stored by a version that
            // read a client's path in place are not served: the client sends them again).
            let path = f.record.sourcePath ?? ""
            let source = copies.holds(path) ? try? SourceFile(path: path) : nil
            guard let source, source.unchanged(size: f.record.sourceSize, modified: f.record.sourceMtime) else {
                failOutgoing(f, key, "the source file changed or is gone; send it again", on: link)
                return
            }
            f.source = source
        }
        if f.record.state == .offered {
            // Not recorded: the store still says offered, so the next session offers it
            // again and the receiver, which has it transferring, resumes it: nothing lost.
            recordingFailed("its start", key, .outgoing) { () throws(StoreError) in
                try store.setTransferState(rowID: f.record.rowID, .transferring, error: nil, savedPath: nil, at: nowMs)
            }
            f.record.state = .transferring
        }
        schedulePump(link)
    }

    func receivedHave(_ key: FileKey, verified: UInt64, on link: any FileLink) {
        guard let f = book.outgoing[key] else { return }
        f.machine.have(verified)
        let confirmed = Int64(f.machine.confirmed)
        if confirmed > f.record.verified {
            // Not recorded: the stored count lags; a resume starts earlier, the receiver
            // skips what it holds.
            recordingFailed("a confirmed count", key, .outgoing) { () throws(StoreError) in
                try store.setTransferVerified(rowID: f.record.rowID, confirmed, at: nowMs)
            }
            f.record.verified = confirmed
            let bytes = min(UInt64(f.record.size), f.machine.confirmed * UInt64(f.record.chunkSize))
            if f.rate.due(bytes: bytes, now: clock.monotonicNow()) {
                emitFile(f.record, .progress, rate: f.rate.bytesPerSecond)
            }
        }
        schedulePump(link)
    }

    /// Runs `pump` on the next loop turn (after this turn's flush), once per connection.
    func schedulePump(_ link: any FileLink) {
        let handle = ObjectIdentifier(link)
        guard !book.pumpQueued.contains(handle), let loop = host?.loop else { return }
        book.pumpQueued.insert(handle)
        loop.execute { [weak self, weak link] in
            guard let self, let link else { return }
            self.book.pumpQueued.remove(handle)
            self.pump(link)
        }
    }

    /// Puts up to `chunksPerTurn` chunks on the connection while it is writable, then
    /// yields the loop (reads, chat) and comes back; the node restarts it when the socket
    /// drained (`connectionBecameWritable`).
    func pump(_ link: any FileLink) {
        guard link.isWritable, let peer = host?.filePeer(of: link) else { return }
        var budget = Self.chunksPerTurn
        var more = false
        for (key, f) in book.outgoing where key.peer == peer && f.machine.next != nil {
            guard budget > 0 else {
                more = true
                break
            }
            if f.machine.listOwed {
                var first = 0
                while first < f.hashes.count {
                    let end = min(first + FileLimits.maxHashesPerRecord, f.hashes.count)
                    link.send(.file(.hashes(key.transfer, first: UInt64(first), hashes: Array(f.hashes[first..<end]))))
                    first = end
                }
                f.machine.listSent()
            }
            // One fstat per batch instead of a hash per chunk: the receiver verifies every
            // chunk against the list anyway; this only spares it a file that changed.
            guard f.source?.unchanged(size: f.record.sourceSize, modified: f.record.sourceMtime) == true else {
                failOutgoing(f, key, "the source file changed while it was being sent; send it again", on: link)
                continue
            }
            for index in f.machine.take(budget: budget) {
                budget -= 1
                guard sendChunk(f, key, index, on: link) else {
                    failOutgoing(f, key, "the source file changed while it was being sent; send it again", on: link)
                    break
                }
                if f.recheckChunk == index { f.recheckChunk = nil }
            }
            if f.machine.canSend { more = true }
        }
        if more { schedulePump(link) }
    }

    /// Reads chunk `index` from the source straight into the connection's outgoing record
    /// stream (one buffer, reused every flush: no array per chunk, no copy of it). False if
    /// the source could not be read in full, or a re-fetched chunk no longer matches its hash.
    private func sendChunk(_ f: OutgoingFile, _ key: FileKey, _ index: UInt64, on link: any FileLink) -> Bool {
        guard let source = f.source, Int(index) < f.hashes.count, let offer = f.record.offer else { return false }
        let recheck = f.recheckChunk == index
        let expected = f.hashes[Int(index)]
        do throws(FileError) {
            try link.sendFileChunk(key.transfer, index: index, length: offer.chunkLength(index)) {
                out throws(FileError) in
                try source.read(offset: index * UInt64(f.record.chunkSize), into: out)
                if recheck, FileHash.of(UnsafeRawBufferPointer(out)) != expected {
                    throw .notSendable(path: source.path, reason: "it changed while being sent")
                }
            }
        } catch {
            return false
        }
        return true
    }

    /// Our side cannot go on: tell the receiver why, record it.
    func failOutgoing(_ f: OutgoingFile, _ key: FileKey, _ reason: String, on link: (any FileLink)?) {
        link?.send(.file(.end(key.transfer, .failed, reason)))
        finishOutgoing(f, key, .failed, error: reason)
    }

    /// Records the end of an outgoing transfer and removes the daemon's copy. An end the
    /// store could not record is logged and the copy kept: the store still says it is
    /// open, so the next session offers it again (an offer) or the receiver's next
    /// `fileWant` is answered, and the receiver's answer ends it again.
    /// `alreadyRecorded`: the caller recorded the end first (the local user's cancel).
    func finishOutgoing(
        _ f: OutgoingFile, _ key: FileKey, _ state: FileTransferRecord.State, error: String?,
        alreadyRecorded: Bool = false
    ) {
        f.record.state = state
        f.record.error = error
        f.record.updatedAt = nowMs
        let recorded =
            alreadyRecorded
            || recordingFailed("its end (\(state.rawValue))", key, .outgoing) { () throws(StoreError) in
                try store.setTransferState(rowID: f.record.rowID, state, error: error, savedPath: nil, at: nowMs)
            }
        f.source = nil
        f.machine.sessionEnded()
        book.outgoing[key] = nil
        // The daemon's copy of a file a client passed is not needed once this transfer ended.
        if recorded, let path = f.record.sourcePath { copies.remove(path) }
        emitFile(f.record, state == .completed ? .completed : state == .failed ? .failed : .cancelled)
        log.info("file transfer ended", ["state": state.rawValue, "peer": key.peer.fingerprintText])
    }
}

/// Hands the source file to NIO's thread pool for hashing (used by one thread at a time).
private final class SourceBox: @unchecked Sendable {
    let source: SourceFile
    init(_ source: SourceFile) { self.source = source }
}
