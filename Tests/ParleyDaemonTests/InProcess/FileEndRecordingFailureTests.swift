import Foundation
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// An offered file's end (the person rejects it, or the sender cancels it) that the store
/// cannot record is logged like every other incoming transfer's record (`recordingFailed`),
/// never dropped silently: the store still says "offered", and the log says why (and the
/// person's reject fails with `storageFailed`, so it is not reported done).
final class FileEndRecordingFailureTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var alice: InProcessNode!
    var bob: InProcessNode!
    let bobLog = CollectedLogLines()
    var source: String!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        var options = NodeOptions()
        options.fileInlineDigestBytes = 64 << 20
        options.fileDiskWorkInline = true
        alice = try InProcessNode(name: "alice", loop: loop, clock: clock, options: options)
        bob = try InProcessNode(name: "bob", loop: loop, clock: clock, options: options, log: bobLog.logger())
        source = NSTemporaryDirectory() + "parley-files-source-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        alice.node.stop()
        bob.node.stop()
        _ = try? loop.syncShutdownGracefully()
        for dir in [alice.directory, bob.directory, source!] { try? FileManager.default.removeItem(atPath: dir) }
        alice = nil
        bob = nil
    }

    func testARejectTheStoreCannotRecordIsLogged() throws {
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let path = source + "/note.txt"
        try Data("the minutes".utf8).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        let copy = try OutgoingCopies(stateDirectory: alice.node.ownIdentity.stateDirectory).copy(
            descriptor: fd, name: "note.txt")
        let future = try alice.node.sendFiles(
            to: "bob", staged: [.init(copy: copy, name: "note.txt", mediaType: nil)], caption: nil)
        loop.run()
        let sent = try XCTUnwrap(try future.wait().first)
        try link.exchange()
        XCTAssertEqual(try bob.node.store.transfers(idPrefix: sent.transfer.hex, limit: 1).first?.state, .offered)

        try bob.node.store.write { db in
            try db.execute(
                sql: """
                    CREATE TEMP TRIGGER transfer_end_fails BEFORE UPDATE ON file_transfer
                    BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
                    """)
        }
        // Not reported done either (the user can reject again): FileDriverFlowTests.
        XCTAssertThrowsError(try bob.node.rejectFile(String(sent.transfer.hex.prefix(8))))
        XCTAssertTrue(
            bobLog.lines.contains { $0.contains("could not record an incoming transfer's progress") },
            "\(bobLog.lines)")
    }
}
