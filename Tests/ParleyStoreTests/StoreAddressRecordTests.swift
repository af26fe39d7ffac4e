import Foundation
import GRDB
import ParleyCore
import XCTest

@testable import ParleyStore

final class StoreAddressRecordTests: StoreDirectoryTestCase {
    private let alice = StoredKeyFixture.key(0xa1)

    private func peer(_ id: IdentityPublicKey) -> PeerRecord {
        PeerRecord(
            identity: id, displayName: "alice", hostName: "h", card: [1], cardSequence: 1,
            noiseKey: StoredKeyFixture.noiseKey(0x55), trust: .pinned, firstSeen: 1, lastSeen: 1, lastAddress: nil)
    }

    func testTheNewestRecordIsKeptAndGoesWithThePeerAndSurvivesAReopen() throws {
        var store: Store? = try Store(directory: directory)
        try store!.upsertPeer(peer(alice))
        try store!.saveAddressRecord([1, 2, 3], of: alice, issuedAt: 100)
        try store!.saveAddressRecord([9], of: alice, issuedAt: 50)  // older: ignored
        XCTAssertEqual(try store!.addressRecords(), [[1, 2, 3]])
        try store!.saveAddressRecord([4, 5], of: alice, issuedAt: 200)
        store = nil
        store = try Store(directory: directory)
        XCTAssertEqual(try store!.addressRecords(), [[4, 5]], "kept across a restart")
        XCTAssertThrowsError(try store!.saveAddressRecord([UInt8](repeating: 0, count: 259), of: alice, issuedAt: 300))
        XCTAssertThrowsError(try store!.saveAddressRecord([], of: alice, issuedAt: 300))
        try store!.forgetPeer(identity: alice)
        XCTAssertEqual(try store!.addressRecords(), [], "a forgotten peer's record goes with it")
    }
}
