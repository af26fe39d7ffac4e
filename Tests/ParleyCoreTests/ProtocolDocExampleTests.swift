import XCTest

@testable import ParleyCore

/// The example blocks of docs/PROTOCOL.md added for issue 33 (item 7): listenPorts,
/// refused, edit, the room history after the create, the file records, address gossip and
/// private presence, each produced by parleyd's own encoders from the inputs the document
/// states. (The conformance suite derives the same blocks from the document alone.)
final class ProtocolDocExampleTests: XCTestCase {
    static let alice = ExampleKeys.aliceIdentity
    static let bob = ExampleKeys.bobIdentity
    static let carol = try! IdentityKeyPair(seed: ExampleKeys.seed(from: 0x60))  // fixed 32-byte seed
    static let t0Ms: UInt64 = 1_767_225_600_000
    static let minuteMs: UInt64 = 60_000
    static let chatID = MessageID(exactly: Array(0x00...0x0f))
    static let transfer = TransferID(exactly: Array(0x20...0x2f))

    func assertExample(_ name: String, _ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(Sodium.hex(bytes), try ProtocolDoc.hexExample(name), name, file: file, line: line)
    }

    func testRecordTypeExamples() throws {
        try assertExample("listen-ports-record", AppRecord.listenPorts([7744, 7745]).encoded())
        try assertExample("refused-record", AppRecord.refused(.peerQuota, [Self.chatID]).encoded())
        let edit = AppRecord.messageAction(
            MessageActionRecord(
                id: MessageID(exactly: Array(0x10...0x1f)), sequence: 2, createdAt: Self.t0Ms + Self.minuteMs,
                target: Self.chatID, action: .edit(body: "Hi Bob, again")))
        try assertExample("edit-record", edit.encoded())
    }

    /// Create, Bob joins, Alice adds Carol, makes Bob an admin, Bob removes Carol, Bob leaves;
    /// each after the previous one. Resolving the whole history accepts every operation.
    func testRoomHistoryExamples() throws {
        let create = try RoomOperation.create(
            name: "lab", members: [Self.bob.publicKey], by: Self.alice, createdAt: Self.t0Ms,
            nonce: RoomID(bytes: Array(0xa0...0xaf))!)  // 16 bytes by construction
        try assertExample("room-create", create.encoded())
        var history = [create]
        func next(_ change: RoomOperation.Change, by actor: IdentityKeyPair) throws -> [UInt8] {
            let op = try RoomOperation.change(
                change, roomID: create.roomID, after: Array(history.suffix(1)), by: actor,
                createdAt: Self.t0Ms + UInt64(history.count) * Self.minuteMs)
            history.append(op)
            return op.encoded()
        }
        try assertExample("room-join", try next(.join, by: Self.bob))
        try assertExample("room-add", try next(.add(Self.carol.publicKey), by: Self.alice))
        try assertExample("room-set-role", try next(.setRole(Self.bob.publicKey, .admin), by: Self.alice))
        // The same removal with a cap (features bit 7), on the same parent; not part of the history.
        let capped = try RoomOperation.change(
            .remove(Self.carol.publicKey), roomID: create.roomID, after: Array(history.suffix(1)), by: Self.bob,
            createdAt: Self.t0Ms + UInt64(history.count) * Self.minuteMs, removalCap: 7)
        try assertExample("room-remove-capped", capped.encoded())
        XCTAssertEqual(try RoomOperation.decode(capped.encoded()).removalCap, 7)
        try assertExample("room-remove", try next(.remove(Self.carol.publicKey), by: Self.bob))
        try assertExample("room-leave", try next(.remove(Self.bob.publicKey), by: Self.bob))
        let state = try XCTUnwrap(RoomResolver.resolve(root: create, operations: history))
        XCTAssertEqual(state.applied.count, 6, "every example operation is valid: \(state.rejected)")
        XCTAssertEqual(state.members, [Self.alice.publicKey])
    }

    func testFileRecordExamples() throws {
        let data = Array("hello".utf8)
        let chunkHash = FileHash.of(data)
        let listHash = FileHash.of(chunkHash)
        let offer = FileOffer(
            transfer: Self.transfer, size: 5, chunkSize: 65_536, contentHash: listHash, listHash: listHash,
            name: "hello.txt", mediaType: "text/plain", caption: "for Bob")
        try assertExample("file-offer-record", AppRecord.file(.offer(offer)).encoded())
        try assertExample("file-want-record", AppRecord.file(.want(Self.transfer, from: 0, needList: true)).encoded())
        try assertExample(
            "file-hashes-record", AppRecord.file(.hashes(Self.transfer, first: 0, hashes: [chunkHash])).encoded())
        try assertExample("file-chunk-record", AppRecord.file(.chunk(Self.transfer, index: 0, data: data)).encoded())
        try assertExample("file-have-record", AppRecord.file(.have(Self.transfer, verified: 1)).encoded())
        try assertExample("file-end-completed-record", AppRecord.file(.end(Self.transfer, .completed, "")).encoded())
        try assertExample(
            "file-end-cancelled-record", AppRecord.file(.end(Self.transfer, .cancelled, "changed my mind")).encoded())
    }

    func testAddressGossipExamples() throws {
        let endpoints = [
            SignedAddressRecord.Endpoint(host: "192.0.2.10", port: 7744)!,  // a literal address
            SignedAddressRecord.Endpoint(host: "2001:db8::10", port: 7744)!  // a literal address
        ]
        let record = try SignedAddressRecord(signing: endpoints, issuedAt: Self.t0Ms, with: Self.alice)
        try assertExample("address-record", AppRecord.addressRecord(record).encoded())
        XCTAssertEqual(try SignedAddressRecord.decode(record.encoded()), record)
        let tags = ContactTags(salt: Array(0xb0...0xbf), identities: [Self.bob.publicKey, Self.carol.publicKey])
        try assertExample("contact-tags-record", AppRecord.contactTags(tags).encoded())
        let nonce: UInt64 = 0x0102_0304_0506_0708
        let request = try XCTUnwrap(DialBackRequest(nonce: nonce, port: 7744))
        try assertExample("dial-back-request-record", AppRecord.dialBackRequest(request).encoded())
        try assertExample(
            "dial-back-result-record",
            AppRecord.dialBackResult(DialBackResult(nonce: nonce, outcome: .connected)).encoded())
    }

    /// Issue 33 item 9: the address-record prefix has no NUL (deployed, kept), and still no
    /// signed statement of one kind can start like one of another: no prefix is a prefix of
    /// another, and a record signed under a NUL-terminated variant does not verify.
    func testSigningPrefixesAreDistinctAndTheAddressPrefixHasNoNUL() throws {
        let prefixes = [Card.signatureDomain, RoomOperation.signatureDomain, SignedAddressRecord.signatureDomain]
        XCTAssertEqual(SignedAddressRecord.signatureDomain, Array("parley address record v1".utf8))
        for (i, a) in prefixes.enumerated() {
            for (j, b) in prefixes.enumerated() where i != j {
                XCTAssertFalse(b.starts(with: a), "\(Sodium.hex(a)) is a prefix of \(Sodium.hex(b))")
            }
        }
        let good = try SignedAddressRecord(
            signing: [SignedAddressRecord.Endpoint(host: "192.0.2.10", port: 7744)!], issuedAt: Self.t0Ms,
            with: Self.alice)
        var withNUL = Array(good.encoded().dropLast(64))
        withNUL += Self.alice.sign(Array("parley address record v1\0".utf8) + withNUL)
        XCTAssertThrowsError(try SignedAddressRecord.decode(withNUL))
    }

    func testPresenceTokenExamples() throws {
        let nonce = Array(UInt8(0xc0)...0xc7)
        let epoch = PresenceToken.epoch(atUnixSeconds: Self.t0Ms / 1000)
        let plain = PresenceToken.make(
            identity: Self.alice.publicKey, networkKey: nil, epoch: epoch, nonce: nonce)
        try assertExample("presence-token", nonce + plain)
        let keyed = PresenceToken.make(
            identity: Self.alice.publicKey, networkKey: Array(0x80...0x9f), epoch: epoch, nonce: nonce)
        try assertExample("presence-token-network-key", nonce + keyed)
    }
}
