import Foundation
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// The local user's answers (`files.accept`, `files.reject`, `files.cancel`, `files.open`)
/// and how a transfer is found by the id a person types. A store failure is the caller's
/// typed error (`FileError.storage`, whose message says what to do); an answer the peer
/// was already told is not undone by a failed record: it is logged and recorded again when
/// the peer's next record about it arrives.
extension FileDriver {
    /// A transfer by id prefix, newest first; exactly one must match.
    func findTransfer(_ prefix: String) throws(FileError) -> FileTransferRecord {
        let found: [FileTransferRecord]
        do { found = try store.transfers(idPrefix: prefix, limit: 2) } catch { throw .storage(error) }
        guard let first = found.first else { throw .notFound(prefix) }
        guard found.count == 1 || first.transfer.hex == prefix else { throw .ambiguous(prefix, found.count) }
        return first
    }

    func cancel(_ prefix: String) throws(FileError) -> FileTransferRecord {
        let rec = try findTransfer(prefix)
        let key = rec.key
        guard !rec.state.isFinal else {
            throw .wrongState(id: rec.transfer.hex, state: rec.state.rawValue, wanted: "offered or transferring")
        }
        try recordLocalEnd(rec, .cancelled)
        host?.fileLink(for: key.peer)?.send(.file(.end(key.transfer, .cancelled, "")))
        switch rec.direction {
        case .outgoing:
            guard let f = outgoing(record: rec) else { return rec }
            finishOutgoing(f, key, .cancelled, error: nil, alreadyRecorded: true)
            return f.record
        case .incoming:
            return endIncoming(rec, key, .cancelled, error: nil)
        }
    }

    func accept(_ prefix: String) throws(FileError) -> FileTransferRecord {
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
        let link = host?.fileLink(for: key.peer)
        if case .refuse(let reason) = verdict {
            // Recorded before the sender is told, like a reject: a refusal the store cannot
            // record is not reported as `failed` (the store would still say offered, and the
            // next session would show the offer again while the sender had ended it). It
            // fails with the storage error instead; nothing changed, the sender is not told,
            // and the user's next accept judges the offer again.
            var failure: StoreError?
            recordingFailed("a refused accept (nothing changed)", key, .incoming) { () throws(StoreError) in
                do throws(StoreError) {
                    try store.setTransferState(rowID: rec.rowID, .failed, error: reason, savedPath: nil, at: nowMs)
                } catch {
                    failure = error
                    throw error
                }
            }
            if let failure { throw .storage(failure) }
            link?.send(.file(.end(key.transfer, .failed, reason)))
            var failed = rec
            failed.state = .failed
            failed.error = reason
            emitFile(failed, .failed)
            return failed
        }
        do { try store.setTransferState(rowID: rec.rowID, .transferring, error: nil, savedPath: nil, at: nowMs) } catch
        {
            throw .storage(error)
        }
        var accepted = rec
        accepted.state = .transferring
        if let f = incoming(record: accepted), let link { performIncoming(f.machine.start(), f, on: link) }
        return accepted
    }

    func reject(_ prefix: String) throws(FileError) -> FileTransferRecord {
        let rec = try findTransfer(prefix)
        let key = rec.key
        guard rec.direction == .incoming, !rec.state.isFinal else {
            throw .wrongState(id: rec.transfer.hex, state: rec.state.rawValue, wanted: "an incoming offer")
        }
        try recordLocalEnd(rec, .rejected)
        host?.fileLink(for: key.peer)?.send(.file(.end(key.transfer, .rejected, "")))
        return endIncoming(rec, key, .rejected, error: nil)
    }

    /// The local user's cancel or reject, recorded before the peer is told or anything is
    /// undone. One the store cannot record is not done, and the user hears so (and can
    /// answer again): the store would still say the transfer is open, so the next session
    /// would offer the file again or resume it, and deliver (or download) what the user
    /// stopped. The peer is told nothing yet.
    private func recordLocalEnd(_ rec: FileTransferRecord, _ state: FileTransferRecord.State) throws(FileError) {
        var failure: StoreError?
        let what = "the user's answer (\(state.rawValue); nothing changed)"
        recordingFailed(what, rec.key, rec.direction) { () throws(StoreError) in
            do throws(StoreError) {
                try store.setTransferState(rowID: rec.rowID, state, error: nil, savedPath: nil, at: nowMs)
            } catch {
                failure = error
                throw error
            }
        }
        if let failure { throw .storage(failure) }
    }

    /// `files.open`: a completed incoming file, opened read-only from the download
    /// directory (or where a moved state directory put it, `ReceivedFileLocation`).
    func open(_ prefix: String) throws(FileError) -> (FileTransferRecord, Int32, Int) {
        let rec = current(try findTransfer(prefix)).0
        guard rec.direction == .incoming else {
            throw .wrongState(id: rec.transfer.hex, state: "outgoing", wanted: "an incoming transfer")
        }
        guard rec.state == .completed, let path = rec.savedPath else {
            throw .wrongState(id: rec.transfer.hex, state: rec.state.rawValue, wanted: "completed")
        }
        let downloads = host?.downloadDirectory ?? path
        var fd: Int32 = -1
        var firstErrno: Int32 = 0
        for candidate in ReceivedFileLocation.candidates(recorded: path, downloadDirectory: downloads) {
            fd = Foundation.open(candidate, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
            if fd >= 0 { break }
            if firstErrno == 0 { firstErrno = errno }
        }
        guard fd >= 0 else {
            throw .io(
                path: path, operation: "cannot open the received file (was it moved or deleted?)", errno: firstErrno)
        }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, Int64(st.st_size) == rec.size else {
            close(fd)
            throw .notSendable(path: path, reason: "the received file changed on disk since it arrived")
        }
        return (rec, fd, Int(st.st_size))
    }
}
