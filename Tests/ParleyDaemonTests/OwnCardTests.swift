import Foundation
import ParleyCore
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// The card's sequence survives the loss of the store: a node that kept its identity key
/// but lost (or restored an old copy of) its database issues a card its peers accept.
final class OwnCardTests: XCTestCase {
    func testSequenceIsTheLargerOfNextAndTheIssueTime() {
        XCTAssertEqual(OwnCard.nextSequence(after: nil, now: 1_700_000_000), 1_700_000_000)
        XCTAssertEqual(
            OwnCard.nextSequence(after: 5, now: 1_700_000_000), 1_700_000_000, "old small sequences jump ahead")
        XCTAssertEqual(
            OwnCard.nextSequence(after: 1_700_000_000, now: 1_700_000_000), 1_700_000_001,
            "two issues in one second still grow")
        XCTAssertEqual(
            OwnCard.nextSequence(after: UInt64.max, now: 1), UInt64.max, "saturates, never wraps to a stale sequence")
    }

    func testAStoreLostAndRecreatedIssuesAHigherSequenceThanBefore() throws {
        let dir = NSTemporaryDirectory() + "parley-owncard-\(UUID().uuidString)"
        try FileManager.default.createDirectory(
            atPath: dir, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (keys, _) = try KeyFiles.loadOrCreate(stateDirectory: dir)
        var store: Store? = try Store(directory: dir)
        let first = try OwnCard.current(
            keys: keys, displayName: "alice", hostName: "h", store: store!, now: 1_700_000_000)
        let renamed = try OwnCard.current(
            keys: keys, displayName: "alice2", hostName: "h", store: store!, now: 1_700_000_000)
        XCTAssertEqual(renamed.sequence, first.sequence + 1)
        store = nil
        // The store is moved aside; the keys stay.
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.moveItem(
                atPath: dir + "/parley.sqlite" + suffix, toPath: dir + "/old.sqlite" + suffix)
        }
        let fresh = try Store(directory: dir)
        let after = try OwnCard.current(
            keys: keys, displayName: "alice2", hostName: "h", store: fresh, now: 1_700_000_060)
        XCTAssertGreaterThan(after.sequence, renamed.sequence, "peers take it as a re-issue, not a stale card")
    }
}
