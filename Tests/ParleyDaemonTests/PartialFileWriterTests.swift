import Foundation
import NIOCore
import NIOPosix
import ParleyCore
import XCTest

@testable import ParleyDaemon

/// The receiver's disk queue on a real event loop and a real queue: jobs run in order, a
/// sync covers every write before it, chunks written again after a resume leave the right
/// bytes, a discarded transfer leaves nothing, and a write error comes back at the next
/// sync and is never renamed into place. (Each chunk is checked against the verified hash
/// list before it reaches the writer: `IncomingTransfer`, FileTransferTests.)
final class PartialFileWriterTests: XCTestCase {
    var group: MultiThreadedEventLoopGroup!
    var directory: String!

    override func setUpWithError() throws {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        directory = NSTemporaryDirectory() + "parley-writer-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try group.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private let chunkSize = 4_096

    private func content(_ chunks: Int) -> [UInt8] {
        (0..<(chunks * chunkSize - 100)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) }
    }

    private func chunk(_ data: [UInt8], _ i: Int) -> [UInt8] {
        Array(data[(i * chunkSize)..<min(data.count, (i + 1) * chunkSize)])
    }

    private func makeWriter(_ t: TransferID) throws -> PartialFileWriter {
        PartialFileWriter(
            partial: try PartialFile(directory: directory, transfer: t), chunkSize: UInt64(chunkSize),
            loop: group.next(), inline: false)
    }

    /// Runs `body` with a callback and waits for the callback's value (it must come on the loop).
    private func awaitResult<T: Sendable>(
        _ loop: EventLoop, _ body: (@escaping @Sendable (T) -> Void) -> Void
    ) throws -> T {
        let promise = loop.makePromise(of: T.self)
        body { value in
            loop.preconditionInEventLoop()
            promise.succeed(value)
        }
        return try promise.futureResult.wait()
    }

    func testChunksWrittenInOrderAreSavedUnderTheirName() throws {
        let data = content(10)
        let t = TransferID.random()
        let w = try makeWriter(t)
        for i in 0..<10 { w.write(chunk(data, i), index: UInt64(i)) }
        let loop = group.next()
        let synced: FileError? = try awaitResult(loop) { done in w.sync(done) }
        XCTAssertNil(synced)
        let outcome: PartialFileWriter.Outcome = try awaitResult(loop) { done in
            w.finish(name: "out.bin", done)
        }
        guard case .saved(let path) = outcome else { return XCTFail("not saved: \(outcome)") }
        XCTAssertEqual(path, directory + "/out.bin")
        XCTAssertEqual(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))), data)
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/" + PartialFile.name(for: t)))
    }

    func testChunksWrittenAgainAfterAResumeLeaveTheRightBytes() throws {
        let data = content(8)
        let t = TransferID.random()
        let w = try makeWriter(t)
        for i in 0..<6 { w.write(chunk(data, i), index: UInt64(i)) }
        // A new session resumes from the durable count 4: chunks 4 and 5 come again.
        for i in 4..<8 { w.write(chunk(data, i), index: UInt64(i)) }
        let outcome: PartialFileWriter.Outcome = try awaitResult(group.next()) { done in
            w.finish(name: "resumed.bin", done)
        }
        guard case .saved(let path) = outcome else { return XCTFail("not saved: \(outcome)") }
        XCTAssertEqual(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))), data)
    }

    func testMoreThanOneWritebackBatchIsSavedWhole() throws {
        // 300 chunks of 4 KiB: the writeback is started in batches (1 MiB), the last one
        // short; every byte must still be there after the sync and the rename.
        let chunks = 300
        let data = content(chunks)
        let t = TransferID.random()
        let w = try makeWriter(t)
        for i in 0..<chunks { w.write(chunk(data, i), index: UInt64(i)) }
        let outcome: PartialFileWriter.Outcome = try awaitResult(group.next()) { done in
            w.finish(name: "batched.bin", done)
        }
        guard case .saved(let path) = outcome else { return XCTFail("not saved: \(outcome)") }
        XCTAssertEqual(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))), data)
    }

    func testADiscardedTransferLeavesNothing() throws {
        let data = content(3)
        let t = TransferID.random()
        let w = try makeWriter(t)
        for i in 0..<3 { w.write(chunk(data, i), index: UInt64(i)) }
        w.discard()
        let synced: FileError? = try awaitResult(group.next()) { done in w.sync(done) }
        _ = synced  // the file is closed: what matters is that the partial file is gone
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), [])
    }

    func testAWriteErrorIsReportedAtTheNextSyncAndLaterWritesAreSkipped() throws {
        // A 1-byte file size limit makes pwrite fail with EFBIG (SIGXFSZ ignored).
        let data = content(2)
        let t = TransferID.random()
        let w = try makeWriter(t)
        let previous = signal(SIGXFSZ, SIG_IGN)
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit)
        var small = limit
        small.rlim_cur = 1
        setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &small)
        defer {
            setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit)
            signal(SIGXFSZ, previous)
        }
        w.write(chunk(data, 0), index: 0)
        let synced: FileError? = try awaitResult(group.next()) { done in w.sync(done) }
        guard case let .io(_, _, code)? = synced else { return XCTFail("no error: \(String(describing: synced))") }
        XCTAssertEqual(code, EFBIG)
        let outcome: PartialFileWriter.Outcome = try awaitResult(group.next()) { done in
            w.finish(name: "big.bin", done)
        }
        guard case .failed = outcome else { return XCTFail("expected the first error again: \(outcome)") }
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/big.bin"))
    }
}
