import Foundation
import NIOCore
import NIOPosix
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Sending files: `files.send` (hash the source once, store one transfer per recipient,
/// offer it), then serving the receiver's `fileWant`s: the hash list, then chunks read
/// from the source in place, each checked against its hash, paced by `pumpFiles`.
extension Node {
    /// Chunks put on one connection per event-loop turn: 256 KiB, so a chat written
    /// meanwhile waits behind at most that (plus what the socket holds), never behind a file.
    static let fileChunksPerTurn = 4

    /// One file to offer: the daemon's own copy (`OutgoingCopies`) and what to call it.
    struct StagedFile: Sendable {
        var copy: String
        var name: String
        var mediaType: String?
    }

    /// `files.send` (descriptor socket): checks the recipients now (errors are thrown at
    /// once), then hashes every staged copy and stores and offers one transfer per file and
    /// recipient: all of them, or, if any file fails, none (and every copy is removed).
    func sendFiles(to selector: String, staged: [StagedFile], caption: String?) throws
        -> EventLoopFuture<[FileTransferRecord]>
    {
        loop.preconditionInEventLoop()
        let copies = OutgoingCopies(stateDirectory: ownIdentity.stateDirectory)
        var recipients: [IdentityPublicKey] = []
        var room: RoomID?
        do {
            if selector.hasPrefix("#") {
                let r = try resolveRoom(selector)
                guard r.isMember else { throw RoomError.notMember(r) }
                recipients = r.joined.filter { $0 != myIdentityKey }
                guard !recipients.isEmpty else { throw FileError.noRecipients(selector) }
                room = r.id
            } else {
                let peer = try resolvePeer(selector)
                if let refusal = sendRefusal(peer) { throw refusal }
                if let conn = activeConnection(for: peer.identity), !conn.remoteFeatures.contains(.files) {
                    throw FileError.peerLacksFiles(displayName(of: peer.identity))
                }
                recipients = [peer.identity]
            }
        } catch {
            for file in staged { copies.remove(file.copy) }
            throw error
        }
        let chunkSize = FileLimits.preferredChunkSize
        var prepared: [EventLoopFuture<(StagedFile, SourceFile.Digest, [UInt8])>] = []
        for file in staged {
            let source: SourceFile
            do { source = try SourceFile(path: file.copy) } catch {
                for file in staged { copies.remove(file.copy) }
                throw error
            }
            let type = file.mediaType ?? MediaType.guess(file.name)
            let box = SourceBox(source)
            let digest: EventLoopFuture<SourceFile.Digest>
            if source.size <= options.fileInlineDigestBytes {
                digest = loop.makeCompletedFuture { try box.source.digest(chunkSize: chunkSize) }
            } else {
                digest = NIOThreadPool.singleton.runIfActive(eventLoop: loop) {
                    try box.source.digest(chunkSize: chunkSize)
                }
            }
            let thumbnail = makeThumbnail(path: file.copy, mediaType: type, size: source.size)
            let typed = StagedFile(copy: file.copy, name: file.name, mediaType: type)
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
            fileDriver.book.outgoing[key] = OutgoingFile(record: stored)
            emitFile(stored, .offered)
            if let conn = activeConnection(for: key.peer), conn.remoteFeatures.contains(.files),
                let offer = stored.offer
            {
                conn.send(.file(.offer(offer)))
            }
        }
        log.info("file offered", ["size": "\(d.size)", "recipients": "\(recipients.count)"])
        return out
    }

    // MARK: Serving

    /// The receiver's `fileWant`: accept, resume or re-fetch from `from`.
    func receivedWant(_ key: FileKey, from: UInt64, needList: Bool, on conn: PeerConnection) {
        guard let f = outgoingFile(key) else {
            conn.send(.file(.end(key.transfer, .failed, "unknown transfer")))
            return
        }
        guard !f.record.state.isFinal else {
            conn.send(Self.endRecord(key.transfer, f.record))
            return
        }
        // A want below what this session already sent is a re-fetch: the receiver found that
        // chunk bad. Read back from the source, it is checked against its hash before it goes
        // out again (the normal path checks the source's size and mtime instead, `pumpFiles`).
        if let sent = f.machine.next, from < sent { f.recheckChunk = from }
        do { try f.machine.want(from: from, needList: needList) } catch {
            conn.close(reason: .protocolError, text: "fileWant from \(from) is past the end of the file")
            return
        }
        // Debug level: a receiver decides how often it asks, so an info line per want would
        // let a peer write the log at will.
        log.debug("file requested", ["from": "\(from)", "list": "\(needList)", "peer": key.peer.fingerprintText])
        if f.source == nil {
            // Only the daemon's own copy is ever opened (transfers stored by a version that
            // read a client's path in place are not served: the client sends them again).
            let path = f.record.sourcePath ?? ""
            let source =
                OutgoingCopies(stateDirectory: ownIdentity.stateDirectory).holds(path)
                ? try? SourceFile(path: path) : nil
            guard let source, source.unchanged(size: f.record.sourceSize, modified: f.record.sourceMtime) else {
                failOutgoing(f, key, "the source file changed or is gone; send it again", on: conn)
                return
            }
            f.source = source
        }
        if f.record.state == .offered {
            f.record.state = .transferring
            try? store.setTransferState(rowID: f.record.rowID, .transferring, at: nowMs)
        }
        schedulePumpFiles(conn)
    }

    func receivedHave(_ key: FileKey, verified: UInt64, on conn: PeerConnection) {
        guard let f = fileDriver.book.outgoing[key] else { return }
        f.machine.have(verified)
        let confirmed = Int64(f.machine.confirmed)
        if confirmed > f.record.verified {
            f.record.verified = confirmed
            try? store.setTransferVerified(rowID: f.record.rowID, confirmed, at: nowMs)
            let bytes = min(UInt64(f.record.size), f.machine.confirmed * UInt64(f.record.chunkSize))
            if f.rate.due(bytes: bytes, now: clock.monotonicNow()) {
                emitFile(f.record, .progress, rate: f.rate.bytesPerSecond)
            }
        }
        schedulePumpFiles(conn)
    }

    /// Runs `pumpFiles` on the next loop turn (after this turn's flush), once per connection.
    func schedulePumpFiles(_ conn: PeerConnection) {
        let handle = ObjectIdentifier(conn)
        guard !fileDriver.book.pumpQueued.contains(handle) else { return }
        fileDriver.book.pumpQueued.insert(handle)
        loop.execute { [weak self, weak conn] in
            guard let self, let conn else { return }
            self.fileDriver.book.pumpQueued.remove(handle)
            self.pumpFiles(conn)
        }
    }

    /// Puts up to `fileChunksPerTurn` chunks on the connection while it is writable, then
    /// yields the loop (reads, chat) and comes back; `connectionBecameWritable` restarts it
    /// after the socket drained.
    func pumpFiles(_ conn: PeerConnection) {
        guard conn.isWritable, let peer = activePeer(of: conn) else { return }
        var budget = Self.fileChunksPerTurn
        var more = false
        for (key, f) in fileDriver.book.outgoing where key.peer == peer && f.machine.next != nil {
            guard budget > 0 else {
                more = true
                break
            }
            if f.machine.listOwed {
                var first = 0
                while first < f.hashes.count {
                    let end = min(first + FileLimits.maxHashesPerRecord, f.hashes.count)
                    conn.send(.file(.hashes(key.transfer, first: UInt64(first), hashes: Array(f.hashes[first..<end]))))
                    first = end
                }
                f.machine.listSent()
            }
            // One fstat per batch instead of a hash per chunk: the receiver verifies every
            // chunk against the list anyway; this only spares it a file that changed.
            guard f.source?.unchanged(size: f.record.sourceSize, modified: f.record.sourceMtime) == true else {
                failOutgoing(f, key, "the source file changed while it was being sent; send it again", on: conn)
                continue
            }
            for index in f.machine.take(budget: budget) {
                budget -= 1
                guard sendChunk(f, key, index, on: conn) else {
                    failOutgoing(f, key, "the source file changed while it was being sent; send it again", on: conn)
                    break
                }
                if f.recheckChunk == index { f.recheckChunk = nil }
            }
            if f.machine.canSend { more = true }
        }
        if more { schedulePumpFiles(conn) }
    }

    /// Reads chunk `index` from the source straight into the connection's outgoing record
    /// stream (one buffer, reused every flush: no array per chunk, no copy of it). False if
    /// the source could not be read in full, or a re-fetched chunk no longer matches its hash.
    private func sendChunk(_ f: OutgoingFile, _ key: FileKey, _ index: UInt64, on conn: PeerConnection) -> Bool {
        guard let source = f.source, Int(index) < f.hashes.count, let offer = f.record.offer else { return false }
        let recheck = f.recheckChunk == index
        let expected = f.hashes[Int(index)]
        do throws(FileError) {
            try conn.sendFileChunk(key.transfer, index: index, length: offer.chunkLength(index)) {
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
    func failOutgoing(_ f: OutgoingFile, _ key: FileKey, _ reason: String, on conn: PeerConnection?) {
        conn?.send(.file(.end(key.transfer, .failed, reason)))
        finishOutgoing(f, key, .failed, error: reason)
    }

    func finishOutgoing(_ f: OutgoingFile, _ key: FileKey, _ state: FileTransferRecord.State, error: String?) {
        f.record.state = state
        f.record.error = error
        f.record.updatedAt = nowMs
        try? store.setTransferState(rowID: f.record.rowID, state, error: error, at: nowMs)
        f.source = nil
        f.machine.sessionEnded()
        fileDriver.book.outgoing[key] = nil
        // The daemon's copy of a file a client passed is not needed once this transfer ended.
        if let path = f.record.sourcePath { OutgoingCopies(stateDirectory: ownIdentity.stateDirectory).remove(path) }
        emitFile(f.record, state == .completed ? .completed : state == .failed ? .failed : .cancelled)
        log.info("file transfer ended", ["state": state.rawValue, "peer": key.peer.fingerprintText])
    }
}

/// Hands the source file to NIO's thread pool for hashing (used by one thread at a time).
private final class SourceBox: @unchecked Sendable {
    let source: SourceFile
    init(_ source: SourceFile) { self.source = source }
}
