import Foundation
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// File transfers in memory: the running transfers (`FileBook`: each one's state machine,
/// chunk hashes, source or partial file, rate), loaded from the store when a session or a
/// record needs one and dropped when it ends; the connections with a file pump queued;
/// the download directory's first-use check; and the bound on refused offers listed per
/// sender (`RefusalRecordLimit`). `Node+File*.swift` route the file records and local
/// calls here and perform what `OutgoingTransfer` and `IncomingTransfer` decide.
///
/// Its state is its own and lives on the node's event loop (the loop is its lock); the
/// refusal bound runs on the injected clock.
final class FileDriver {
    /// Only the file-transfer concern of the store (`FileTransferStore`), read on a miss of
    /// `book`; the per-chunk writes go to the node's concrete `Store`.
    let store: any FileTransferStore
    let clock: any NodeClock
    /// The running transfers, by peer and transfer id.
    var book = FileBook()
    /// How many refused offers per sender are written and announced.
    private var refusals = RefusalRecordLimit()

    init(store: any FileTransferStore, clock: any NodeClock) {
        self.store = store
        self.clock = clock
    }

    /// In-memory runtime of an outgoing transfer, created from its record (given, or read
    /// from the store) when needed; a final one is not kept.
    func outgoing(_ key: FileKey, _ rec: FileTransferRecord? = nil) -> OutgoingFile? {
        if let f = book.outgoing[key] { return f }
        let record = rec ?? (try? store.transfer(peer: key.peer, transfer: key.transfer, direction: .outgoing))
        guard let record, record.direction == .outgoing else { return nil }
        let f = OutgoingFile(record: record)
        if !record.state.isFinal { book.outgoing[key] = f }
        return f
    }

    /// In-memory runtime of an incoming transfer that is transferring, created from its
    /// record (given, or read from the store) when needed.
    func incoming(_ key: FileKey, _ rec: FileTransferRecord? = nil) -> IncomingFile? {
        if let f = book.incoming[key] { return f }
        let record = rec ?? (try? store.transfer(peer: key.peer, transfer: key.transfer, direction: .incoming))
        guard let record, record.direction == .incoming, record.state == .transferring, let offer = record.offer
        else { return nil }
        let f = IncomingFile(record: record, offer: offer)
        book.incoming[key] = f
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

    /// The session with `peer` on `connection` ended: nothing more is sent until the next
    /// `fileWant`, and its queued pump is dropped.
    func sessionEnded(peer: IdentityPublicKey, connection: ObjectIdentifier) {
        for (key, f) in book.outgoing where key.peer == peer { f.machine.sessionEnded() }
        book.pumpQueued.remove(connection)
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
}
