import Foundation
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// The drivers depend on the store's concern protocols (`PeerStore`, `FileTransferStore`),
/// so a test can stand between a driver and a real store and count what it reads: the
/// peer directory's cache and the file driver's in-memory book are what keep the store
/// off the per-send and per-chunk paths.
final class StoreSeamTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var dir: String!
    var store: Store!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        dir = try makeTestDirectory("parley-storeseam")
        store = try Store(directory: dir)
    }

    override func tearDownWithError() throws {
        store = nil
        _ = try? loop.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: dir)
    }

    func testThePeerDirectoryReadsThePeerTableOncePerWrite() throws {
        let counting = CountingPeerStore(store)
        let directory = PeerDirectory(store: counting, myName: "me")
        let bob = try TestIdentity(name: "bob")
        try directory.upsert(bob.pinnedRecord())
        for _ in 0..<50 {
            XCTAssertEqual(directory.peer(bob.identity)?.displayName, "bob")
            XCTAssertEqual(try directory.resolve("bob").identity, bob.identity)
        }
        _ = directory.nameClashes()
        XCTAssertEqual(counting.peerListReads, 1, "every lookup after the first is served from the cache")
        try directory.setTrust(identity: bob.identity, .verified)
        XCTAssertEqual(directory.peer(bob.identity)?.trust, .verified, "a write through the directory is seen")
        XCTAssertEqual(counting.peerListReads, 2)
    }

    func testARunningTransferIsReadFromTheStoreOnceAndAFinishedOneIsNotKept() throws {
        let counting = CountingFileTransferStore(store)
        let driver = FileDriver(store: counting, clock: clock)
        let peer = try TestIdentity(name: "p").identity
        func offer(_ state: FileTransferRecord.State) throws -> FileKey {
            let rec = FileTransferRecord(
                transfer: .random(), peer: peer, direction: .outgoing, room: nil, name: "f", size: 1,
                mediaType: "text/plain", caption: "", thumbnail: [], chunkSize: 1,
                contentHash: [UInt8](repeating: 1, count: FileHash.length),
                listHash: [UInt8](repeating: 2, count: FileHash.length), chunkHashes: nil, state: state,
                createdAt: 1, updatedAt: 1)
            return try store.insertTransfer(rec).record.key
        }
        let running = try offer(.transferring)
        for _ in 0..<10 { XCTAssertNotNil(try driver.outgoing(running)) }
        XCTAssertEqual(counting.transferReads, 1, "then served from the book")
        let done = try offer(.completed)
        for _ in 0..<3 { XCTAssertEqual(try driver.outgoing(done)?.record.state, .completed) }
        XCTAssertEqual(counting.transferReads, 4, "a final transfer is not kept in memory")
    }
}

/// A real store behind the `PeerStore` seam, counting the directory's full reads.
private final class CountingPeerStore: PeerStore {
    let inner: Store
    private(set) var peerListReads = 0
    init(_ inner: Store) { self.inner = inner }

    func peers() throws(StoreError) -> [PeerRecord] {
        peerListReads += 1
        return try inner.peers()
    }
    func peer(identity: IdentityPublicKey) throws(StoreError) -> PeerRecord? { try inner.peer(identity: identity) }
    func peers(named displayName: String) throws(StoreError) -> [PeerRecord] { try inner.peers(named: displayName) }
    func peer(atAddress address: String) throws(StoreError) -> PeerRecord? { try inner.peer(atAddress: address) }
    func upsertPeer(_ record: PeerRecord) throws(StoreError) { try inner.upsertPeer(record) }
    func setTrust(identity: IdentityPublicKey, _ trust: TrustState) throws(StoreError) {
        try inner.setTrust(identity: identity, trust)
    }
    func setNickname(identity: IdentityPublicKey, _ nickname: String?) throws(StoreError) {
        try inner.setNickname(identity: identity, nickname)
    }
    func replacePeer(old: IdentityPublicKey, new: IdentityPublicKey, at: Int64) throws(StoreError) -> Int {
        try inner.replacePeer(old: old, new: new, at: at)
    }
    func previousKeys(of identity: IdentityPublicKey) throws(StoreError) -> [PeerRecord] {
        try inner.previousKeys(of: identity)
    }
    func forgetPeer(identity: IdentityPublicKey) throws(StoreError) -> [IdentityPublicKey] {
        try inner.forgetPeer(identity: identity)
    }
    func touchPeer(identity: IdentityPublicKey, at: Int64, address: String?) throws(StoreError) {
        try inner.touchPeer(identity: identity, at: at, address: address)
    }
    func keyChanges(involving identity: IdentityPublicKey) throws(StoreError) -> [KeyChangeRecord] {
        try inner.keyChanges(involving: identity)
    }
    func expireUnusedPeers(lastSeenBefore: Int64, keep: Set<IdentityPublicKey>) throws(StoreError)
        -> [IdentityPublicKey]
    {
        try inner.expireUnusedPeers(lastSeenBefore: lastSeenBefore, keep: keep)
    }
    func hasExchangedMessages(with peer: IdentityPublicKey) throws(StoreError) -> Bool {
        try inner.hasExchangedMessages(with: peer)
    }
}

/// A real store behind the `FileTransferStore` seam, counting lookups by key.
private final class CountingFileTransferStore: ForwardingFileTransferStore {
    let inner: Store
    private(set) var transferReads = 0
    init(_ inner: Store) { self.inner = inner }

    func transfer(
        peer: IdentityPublicKey, transfer: TransferID, direction: FileTransferRecord.Direction
    ) throws(StoreError) -> FileTransferRecord? {
        transferReads += 1
        return try inner.transfer(peer: peer, transfer: transfer, direction: direction)
    }
}
