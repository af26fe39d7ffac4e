import Dispatch
import Foundation
import NIOCore
import ParleyCore

/// The receiver's disk work for one incoming transfer, on a serial queue of its own so the
/// event loop only decrypts, checks each chunk against its hash and hands it over: the
/// `pwrite`, the running whole-file hash (each byte hashed once more, in order, as it is
/// written), the `fdatasync` of a checkpoint and the final hash check and rename. Jobs run
/// in the order they were given, so a checkpoint's sync covers every chunk written before
/// it; what is queued is bounded by the sender's window (256 chunks beyond the last
/// `fileHave`, which is sent only after the sync). Results come back on the event loop.
///
/// `inline`: every job runs at once on the caller's thread (unit tests on an
/// EmbeddedEventLoop, which must not be touched from another thread).
final class PartialFileWriter: @unchecked Sendable {
    enum Outcome: Sendable {
        /// The hash matched; the file was moved to this path.
        case saved(String)
        case hashMismatch
        case failed(FileError)
    }

    private let queue: DispatchQueue?
    private let loop: EventLoop
    private let chunkSize: UInt64
    // Touched only by jobs (on the queue, or inline): never from the loop directly.
    private let partial: PartialFile
    private var wholeHash: FileHash?
    /// Chunks fed to `wholeHash` (from 0, in order).
    private var hashedChunks: UInt64 = 0
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

    /// Writes chunk `index` (verified by the caller) at its offset and feeds the whole-file
    /// hash. After a restart or a resume below what was hashed, the hash is first rebuilt
    /// from what is on disk before the chunk.
    func write(_ data: [UInt8], index: UInt64) {
        run { [self] in
            guard failure == nil else { return }
            do throws(FileError) {
                let offset = index * chunkSize
                if wholeHash == nil || hashedChunks != index {
                    wholeHash = try partial.hash(through: offset)
                    hashedChunks = index
                }
                try partial.write(data, at: offset)
                partial.startWriteback(offset: offset, length: data.count)
                wholeHash?.update(data)
                hashedChunks = index + 1
            } catch {
                failure = error
            }
        }
    }

    /// Makes everything written so far durable; `done` runs on the loop with nil or the
    /// first error of any job so far.
    func sync(_ done: @escaping @Sendable (FileError?) -> Void) {
        run { [self] in
            if failure == nil {
                do throws(FileError) { try partial.sync() } catch { failure = error }
            }
            let result = failure
            back { done(result) }
        }
    }

    /// Every chunk is written: compare the whole-file hash over `size` bytes (`count`
    /// chunks) with `expected`; on a match make it durable and move it into place as
    /// `name`. `done` runs on the loop.
    func finish(
        size: UInt64, count: UInt64, expected: [UInt8], name: String, _ done: @escaping @Sendable (Outcome) -> Void
    ) {
        run { [self] in
            let outcome: Outcome
            do throws(FileError) {
                if let failure { throw failure }
                if wholeHash == nil || hashedChunks != count {
                    wholeHash = try partial.hash(through: size)
                    hashedChunks = count
                }
                if wholeHash?.finish() == expected {
                    outcome = .saved(try partial.moveIntoPlace(name: name))
                } else {
                    outcome = .hashMismatch
                }
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
