import Foundation
import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// The file driver on a virtual-time loop with a real store: the refusal bound on the
/// mock clock, the download directory's first-use check, and what is (not) kept in memory.
final class FileDriverTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var directory: String!
    var driver: FileDriver!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        directory = try makeTestDirectory("parley-filedriver")
        driver = FileDriver(store: try Store(directory: directory), clock: clock)
    }

    override func tearDownWithError() throws {
        driver = nil
        _ = try? loop.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A flood of refused offers is listed only at the bound: a burst, one warning, then
    /// one per interval of the (mock) clock.
    func testRefusedOffersAreListedOnlyAtTheirRateOnTheMockClock() throws {
        let sender = try TestIdentity(name: "flood").card.identityKey
        for _ in 0..<RefusalRecordLimit.defaultBurst { XCTAssertEqual(driver.refusalListed(from: sender), .record) }
        XCTAssertEqual(driver.refusalListed(from: sender), .dropFirst)
        XCTAssertEqual(driver.refusalListed(from: sender), .drop)
        loop.advanceTime(by: .seconds(6))
        XCTAssertEqual(driver.refusalListed(from: sender), .record)
        XCTAssertEqual(
            driver.refusalListed(from: try TestIdentity(name: "other").card.identityKey), .record,
            "each sender has its own bound")
    }

    func testTheDownloadDirectoryIsMadePrivateOnceAndAnUnsafeOneRefused() throws {
        let downloads = directory + "/files"
        try driver.ensureDownloadDirectory(downloads)
        let mode = try FileManager.default.attributesOfItem(atPath: downloads)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o700)

        let fresh = FileDriver(store: driver.store, clock: clock)
        let open = directory + "/open"
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false)
        XCTAssertEqual(chmod(open, 0o777), 0)
        XCTAssertThrowsError(try fresh.ensureDownloadDirectory(open)) { error in
            guard case FileError.unsafeDownloadDirectory = error else { return XCTFail("\(error)") }
        }
    }

    func testATransferTheStoreDoesNotHoldIsNotInMemory() throws {
        let key = FileKey(peer: try TestIdentity(name: "p").card.identityKey, transfer: TransferID.random())
        XCTAssertNil(try driver.outgoing(key))
        XCTAssertNil(try driver.incoming(key))
        XCTAssertTrue(driver.book.outgoing.isEmpty && driver.book.incoming.isEmpty)
    }
}
