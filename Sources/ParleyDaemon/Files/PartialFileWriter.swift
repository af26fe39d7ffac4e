import Dispatch
import Foundation
import NIOCore
import ParleyCore

/// The receiver's disk work for one incoming transfer, on a serial queue of its own so the
/// event loop only decrypts, checks each chunk against its hash and hands it over: the
/// `pwrite`, the `fdatasync` of a checkpoint and the final sync and rename. Jobs run
/// in the order they were given, so a checkpoint's sync covers every chunk written before
/// it; what is queued is bounded by the sender's window (256 chunks beyond the last
/// `fileHave`, which is sent only after the sync). Results come back on the event loop.
///
/// `inline`: every job runs at once on the caller's thread (unit tests on an
/// EmbeddedEventLoop, which must not be touched from another thread).
final class PartialFileWriter: @unchecked Sendable {
    enum Outcome: Sendable {
        /// The file was made durable and moved to this path.
        case saved(String)
        case failed(FileError)
    }

    private let queue: DispatchQueue?
    private let loop: EventLoop
    private let chunkSize: UInt64
    // Touched only by jobs (on the queue, or inline): never from the loop directly.
    private let partial: PartialFile
    /// Written bytes whose writeback has not been started yet: `[start, end)` of the file.
    private var unflushed: Range<UInt64>?

    /// Writeback is started once this much is written (not per chunk): each disk request is
    /// then a megabyte, not 64 KiB (a request per chunk cost a virtio kick each, about 3 % of
    /// both cores in row 10a's profile), and still little is dirty when a chat's fsync on the
    /// same file system runs (ext4 commits its journal for the whole file system).
    static let writebackBatchBytes: UInt64 = 1 << 20
    /// The first write or sync error: later jobs do nothing, the next sync or finish reports it.
    private var failure: FileError?

    init(partial: PartialFile, chunkSize: UInt64, loop: EventLoop, inline: Bool) {
        self.partial = partial
        self.chunkSize = chunkSize
        self.loop = loop
        queue = inline ? nil : DispatchQueue(label: "parleyd.file-writer")
    }

    private func run(_ job: @escaping @Sendable () -> Void) {
        if let queue { queue.async(execute: job) } else { job() }
    }

    private func back(_ done: @escaping @Sendable () -> Void) {
        if queue == nil { done() } else { loop.execute(done) }
    }

    /// Writes chunk `index` (verified by the caller against the verified hash list) at its
    /// offset.
    func write(_ data: [UInt8], index: UInt64) {
        run { [self] in
            guard failure == nil else { return }
            do throws(FileError) {
                let offset = index * chunkSize
                try partial.write(data, at: offset)
                let end = offset + UInt64(data.count)
                // Chunks come in order; a resume below starts a new range.
                if let r = unflushed, r.upperBound == offset {
                    unflushed = r.lowerBound..<end
                } else {
                    startWriteback()
                    unflushed = offset..<end
                }
                if let r = unflushed, UInt64(r.count) >= Self.writebackBatchBytes { startWriteback() }
            } catch {
                failure = error
            }
        }
    }

    private func startWriteback() {
        guard let r = unflushed else { return }
        partial.startWriteback(offset: r.lowerBound, length: Int(r.count))
        unflushed = nil
    }

    /// Makes everything written so far durable; `done` runs on the loop with nil or the
    /// first error of any job so far.
    func sync(_ done: @escaping @Sendable (FileError?) -> Void) {
        run { [self] in
            if failure == nil {
                unflushed = nil  // the sync writes it
                do throws(FileError) { try partial.sync() } catch { failure = error }
            }
            let result = failure
            back { done(result) }
        }
    }

    /// Every chunk is written, each verified on arrival against the hash list that matched
    /// the offer's file hash (docs/PROTOCOL.md "Files": that is the whole-file check): make
    /// the file durable and move it into place as `name`. `done` runs on the loop.
    func finish(name: String, _ done: @escaping @Sendable (Outcome) -> Void) {
        run { [self] in
            let outcome: Outcome
            do throws(FileError) {
                if let failure { throw failure }
                outcome = .saved(try partial.moveIntoPlace(name: name))
            } catch {
                outcome = .failed(error)
            }
            back { done(outcome) }
        }
    }

    /// Closes and deletes the partial file, after whatever is queued.
    func discard() {
        run { [self] in partial.discard() }
    }
}
