import Foundation
import ParleyCore
import XCTest

@testable import ParleyDaemon

/// The daemon's own copy of a file a client sends holds exactly what reading the descriptor
/// gives, from its first byte, whatever the descriptor's position (also for a file whose
/// size the kernel does not know), and is private to the daemon.
final class OutgoingCopiesTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "parley-copies-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func copy(of fd: Int32) throws -> [UInt8] {
        let copies = OutgoingCopies(stateDirectory: directory + "/state")
        try FileManager.default.createDirectory(atPath: directory + "/state", withIntermediateDirectories: true)
        let path = try copies.copy(descriptor: fd, name: "the file")
        XCTAssertTrue(copies.holds(path))
        var st = stat()
        XCTAssertEqual(stat(path, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    func testACopyHoldsEveryByteFromTheStartWhateverTheDescriptorsPosition() throws {
        for size in [0, 1, 65_537, (3 << 20) + 5] {
            let content = Sodium.randomBytes(size)
            let path = directory + "/source-\(size)"
            try Data(content).write(to: URL(fileURLWithPath: path))
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            XCTAssertGreaterThanOrEqual(fd, 0)
            defer { close(fd) }
            // The client may have read some of it already: the copy still starts at byte 0.
            if size > 0 { XCTAssertEqual(lseek(fd, off_t(size / 2), SEEK_SET), off_t(size / 2)) }
            XCTAssertEqual(try copy(of: fd), content, "size \(size)")
        }
    }

    /// A file whose size the kernel reports as 0 though reading gives bytes (procfs): the copy
    /// holds what reading gives (a copy by size, or by `copy_file_range`, would be empty).
    func testAFileOfUnknownSizeIsCopiedByReading() throws {
        let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var st = stat()
        XCTAssertEqual(fstat(fd, &st), 0)
        XCTAssertEqual(st.st_size, 0, "procfs reports no size")
        let copied = try copy(of: fd)
        XCTAssertTrue(String(decoding: copied, as: UTF8.self).hasPrefix("Name:"), "the copy holds what reading gives")
    }

    func testADescriptorNotOpenForReadingIsRefused() throws {
        let path = directory + "/write-only"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        XCTAssertThrowsError(try copy(of: fd))
    }
    /// The offer's digest taken while copying (issue 32: the source is read once) is the one
    /// a separate pass over the copy gives: the same chunk hashes, file hash, size and
    /// modification time, for files that end inside a chunk, on a chunk boundary, and past
    /// the copy buffer.
    func testTheDigestTakenWhileCopyingIsTheOneReadingTheCopyGives() throws {
        let copies = OutgoingCopies(stateDirectory: directory + "/state")
        try FileManager.default.createDirectory(atPath: directory + "/state", withIntermediateDirectories: true)
        for chunkSize in [4_096, 65_536] {
            for size in [0, 1, chunkSize, chunkSize + 1, (1 << 20) - 1, 1 << 20, (3 << 20) + 5] {
                let path = directory + "/source-\(chunkSize)-\(size)"
                try Data(Sodium.randomBytes(size)).write(to: URL(fileURLWithPath: path))
                let fd = open(path, O_RDONLY | O_CLOEXEC)
                XCTAssertGreaterThanOrEqual(fd, 0)
                defer { close(fd) }
                let (copy, digest) = try copies.copyAndDigest(descriptor: fd, name: "the file", chunkSize: chunkSize)
                let read = try SourceFile(path: copy).digest(chunkSize: chunkSize)
                let what = "chunk \(chunkSize), size \(size)"
                XCTAssertEqual(digest.size, UInt64(size), what)
                XCTAssertEqual(digest.size, read.size, what)
                XCTAssertEqual(digest.modified, read.modified, what)
                XCTAssertTrue(digest.chunkHashes == read.chunkHashes, "chunk hashes differ, \(what)")
                XCTAssertEqual(digest.contentHash, read.contentHash, what)
                copies.remove(copy)
            }
        }
    }
}
