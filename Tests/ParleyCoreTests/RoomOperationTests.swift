import ParleyCore
import XCTest

/// Room operations: signing, verifying, every rejection, the size bound, the doc example.
final class RoomOperationTests: XCTestCase {
    static let alice = ExampleKeys.aliceIdentity
    static let bob = ExampleKeys.bobIdentity
    static let carol = try! IdentityKeyPair(seed: ExampleKeys.seed(from: 0x80))  // fixed 32-byte seed
    static let roomID = RoomID(bytes: Array(0xa0...0xaf))!  // 16 bytes by construction
    static let createdAt: UInt64 = 1_767_225_600_000

    func create(
        members: [IdentityPublicKey] = [bob.publicKey], name: String = "lab",
        policy: RoomOperation.Policy = .init()
    ) throws -> RoomOperation {
        try RoomOperation.create(
            name: name, members: members, policy: policy, by: Self.alice, createdAt: Self.createdAt,
            nonce: Self.roomID)
    }

    func be64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> UInt64(56 - 8 * $0)) } }

    /// Builds operation bytes field by field, as docs/PROTOCOL.md describes them, signed by
    /// `signer` over the documented domain: decode failures then come from the field.
    func raw(
        version: UInt8 = 2, kind: UInt8 = 1, sequence: UInt64 = 1, actor: IdentityPublicKey = alice.publicKey,
        parents: [[UInt8]] = [], parentCount: UInt8? = nil, body: [UInt8]? = nil,
        signer: IdentityKeyPair = alice, domain: String = "parley-room-op-v2\0"
    ) -> [UInt8] {
        var b: [UInt8] = [version, kind] + Self.roomID.bytes + be64(sequence) + be64(Self.createdAt) + actor.bytes
        b.append(parentCount ?? UInt8(parents.count))
        for p in parents { b += p }
        b += body ?? createBody(name: Array("lab".utf8), members: [Self.alice.publicKey, Self.bob.publicKey].sorted())
        return b + signer.sign(Array(domain.utf8) + b)
    }

    func createBody(name: [UInt8], members: [IdentityPublicKey], count: Int? = nil, flags: UInt8 = 0) -> [UInt8] {
        let n = count ?? members.count
        return [UInt8(name.count)] + name + [flags, UInt8(n >> 8), UInt8(n & 0xff)] + members.flatMap(\.bytes)
    }

    func assertDecodeFails(
        _ bytes: [UInt8], _ expected: RoomOperationError, file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try RoomOperation.decode(bytes), file: file, line: line) { error in
            XCTAssertEqual(error as? RoomOperationError, expected, file: file, line: line)
        }
    }

    // MARK: - Round trips

    func testCreateRoundTripsAndIncludesTheCreator() throws {
        let op = try create()
        XCTAssertEqual(op.kind, .create)
        XCTAssertEqual(op.sequence, 1)
        XCTAssertEqual(op.parents, [])
        guard case let .create(name, members, policy) = op.change else { return XCTFail("not a create") }
        XCTAssertEqual(name, "lab")
        XCTAssertEqual(policy, .init(onlyAdminsAdd: false))
        XCTAssertEqual(members, [Self.alice.publicKey, Self.bob.publicKey].sorted())
        let decoded = try RoomOperation.decode(op.encoded())
        XCTAssertEqual(decoded, op)
        XCTAssertEqual(decoded.hash, op.hash)
        XCTAssertEqual(decoded.encoded(), op.encoded())
    }

    func testMembersAreSortedAndDeduplicated() throws {
        let op = try create(members: [
            Self.carol.publicKey, Self.bob.publicKey, Self.carol.publicKey, Self.alice.publicKey
        ])
        guard case let .create(_, members, _) = op.change else { return XCTFail("not a create") }
        XCTAssertEqual(members, [Self.alice.publicKey, Self.bob.publicKey, Self.carol.publicKey].sorted())
    }

    func testChangeTakesItsSequenceFromItsParentsAndRoundTrips() throws {
        let root = try create()
        let add = try RoomOperation.change(
            .add(Self.carol.publicKey), roomID: root.roomID, after: [root],
            by: Self.bob, createdAt: 5)
        XCTAssertEqual(add.roomID, root.roomID)
        XCTAssertEqual(add.sequence, 2)
        XCTAssertEqual(add.parents, [root.hash])
        XCTAssertEqual(add.actor, Self.bob.publicKey)
        XCTAssertEqual(add.target, Self.carol.publicKey)
        let remove = try RoomOperation.change(
            .remove(Self.bob.publicKey), roomID: root.roomID, after: [add, root],
            by: Self.alice, createdAt: 6)
        XCTAssertEqual(remove.sequence, 3)
        XCTAssertEqual(remove.parents, [add.hash, root.hash].sorted())
        for op in [add, remove] { XCTAssertEqual(try RoomOperation.decode(op.encoded()), op) }
    }

    func testHashNamesTheContentAndAckIDIsItsPrefix() throws {
        let a = try create()
        let b = try RoomOperation.create(
            name: "lab", members: [Self.bob.publicKey], by: Self.alice,
            createdAt: Self.createdAt + 1, nonce: Self.roomID)
        XCTAssertNotEqual(a.hash, b.hash)
        XCTAssertEqual(a.hash.ackID.bytes, Array(a.hash.bytes.prefix(16)))
    }

    func testLargestOperationIsExactlyTheBound() throws {
        let members = (0..<RoomLimits.maxCreateMembers - 1).map { i in
            try! IdentityKeyPair(seed: ExampleKeys.seed(from: UInt8(100 + i))).publicKey  // fixed seeds
        }
        let op = try create(members: members, name: String(repeating: "n", count: RoomLimits.maxNameBytes))
        XCTAssertEqual(op.encoded().count, RoomOperation.maxEncodedLength)
        XCTAssertEqual(try RoomOperation.decode(op.encoded()), op)
    }

    // MARK: - Tampering and signatures

    func testEveryFlippedBitIsRejected() throws {
        let root = try create()
        let add = try RoomOperation.change(
            .add(Self.carol.publicKey), roomID: Self.roomID, after: [root],
            by: Self.bob, createdAt: 5)
        for op in [root, add] {
            let bytes = op.encoded()
            for i in bytes.indices {
                var tampered = bytes
                tampered[i] ^= 0x01
                XCTAssertThrowsError(try RoomOperation.decode(tampered), "byte \(i) of \(op.kind)")
            }
        }
    }

    func testSignatureByAnotherKeyIsRejected() {
        assertDecodeFails(raw(signer: Self.bob), .badSignature)
    }

    func testSignatureWithoutTheDomainIsRejected() {
        assertDecodeFails(raw(domain: ""), .badSignature)
        assertDecodeFails(raw(domain: "parley-card-v1\0"), .badSignature)
    }

    func testRawBuilderProducesAValidOperation() throws {
        // Guards the rejection tests: with valid fields the hand-built bytes decode.
        let op = try RoomOperation.decode(raw())
        XCTAssertEqual(op.encoded(), raw())
    }

    // MARK: - Structure

    func testUnsupportedVersionAndKind() {
        assertDecodeFails(raw(version: 1, domain: "parley-room-op-v1\0"), .unsupportedVersion(1))
        assertDecodeFails(raw(version: 3), .unsupportedVersion(3))
        assertDecodeFails(raw(kind: 9), .unknownKind(9))
        assertDecodeFails(raw(kind: 0), .unknownKind(0))
    }

    func testTruncationAtEveryLengthAndTrailingBytes() {
        let bytes = raw()
        for n in 0..<bytes.count {
            XCTAssertThrowsError(try RoomOperation.decode(Array(bytes.prefix(n))), "length \(n)")
        }
        assertDecodeFails(bytes + [0], .trailingBytes(count: 1))
    }

    func testOversizeIsRejectedBeforeParsing() {
        assertDecodeFails(
            [UInt8](repeating: 1, count: RoomOperation.maxEncodedLength + 1),
            .tooLarge(RoomOperation.maxEncodedLength + 1))
    }

    func testNameRules() {
        for bad in ["", String(repeating: "x", count: RoomLimits.maxNameBytes + 1), "a\u{202E}b", "line\nbreak"] {
            XCTAssertThrowsError(try create(name: bad)) { error in
                guard case .invalidName = error as? RoomOperationError else { return XCTFail("\(error)") }
            }
        }
        let body = createBody(name: [0xff, 0xfe], members: [Self.alice.publicKey])
        XCTAssertThrowsError(try RoomOperation.decode(raw(body: body))) { error in
            guard case .invalidName = error as? RoomOperationError else { return XCTFail("\(error)") }
        }
    }

    func testMemberRules() {
        let a = Self.alice.publicKey
        let b = Self.bob.publicKey
        let sorted = [a, b].sorted()
        let cases: [[UInt8]] = [
            createBody(name: Array("x".utf8), members: sorted.reversed()),  // not ascending
            createBody(name: Array("x".utf8), members: [a, a]),  // duplicate
            createBody(name: Array("x".utf8), members: [b]),  // creator missing
            createBody(name: Array("x".utf8), members: [], count: 0),  // empty
            createBody(name: Array("x".utf8), members: [a], count: RoomLimits.maxCreateMembers + 1)  // too many
        ]
        for body in cases {
            XCTAssertThrowsError(try RoomOperation.decode(raw(body: body))) { error in
                guard case .invalidMembers = error as? RoomOperationError else { return XCTFail("\(error)") }
            }
        }
        let tooMany = (0..<RoomLimits.maxCreateMembers).map { i in
            try! IdentityKeyPair(seed: ExampleKeys.seed(from: UInt8(100 + i))).publicKey  // fixed seeds
        }
        XCTAssertThrowsError(try create(members: tooMany)) { error in
            guard case .invalidMembers = error as? RoomOperationError else { return XCTFail("\(error)") }
        }
    }

    func testParentAndSequenceRules() throws {
        let h1 = [UInt8](repeating: 1, count: 32)
        let h2 = [UInt8](repeating: 2, count: 32)
        let target = Self.carol.publicKey.bytes
        func expectParents(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertThrowsError(try RoomOperation.decode(bytes), file: file, line: line) { error in
                guard case .invalidParents = error as? RoomOperationError else {
                    return XCTFail("\(error)", file: file, line: line)
                }
            }
        }
        expectParents(raw(parents: [h1]))  // a create with a parent
        expectParents(raw(kind: 2, sequence: 2, parents: [], body: target))  // an add without one
        expectParents(raw(kind: 2, sequence: 2, parents: [h2, h1], body: target))  // not ascending
        expectParents(raw(kind: 2, sequence: 2, parents: [h1, h1], body: target))  // duplicate
        expectParents(
            raw(
                kind: 3, sequence: 2,
                parents: (0...RoomLimits.maxParents).map { [UInt8](repeating: UInt8($0), count: 32) },
                body: target))  // too many
        assertDecodeFails(raw(sequence: 2), .invalidSequence(2))
        assertDecodeFails(raw(kind: 2, sequence: 1, parents: [h1], body: target), .invalidSequence(1))
        XCTAssertNoThrow(try RoomOperation.decode(raw(kind: 3, sequence: 9, parents: [h1, h2], body: target)))
    }

    // MARK: - Version 2: the room id, roles, rename, policy, join

    func testTheRoomIDIsTheCreatesHashPrefixAndNotItsNonce() throws {
        let op = try create()
        XCTAssertEqual(op.roomID.bytes, Array(op.hash.bytes.prefix(16)))
        XCTAssertEqual(op.roomField, Self.roomID)
        XCTAssertNotEqual(op.roomID, Self.roomID, "a create cannot choose its room id: it would be squattable")
        // Two creates that differ only by nonce found two rooms.
        let other = try RoomOperation.create(
            name: "lab", members: [Self.bob.publicKey], by: Self.alice,
            createdAt: Self.createdAt, nonce: RoomID(bytes: Array(0xb0...0xbf))!)
        XCTAssertNotEqual(other.roomID, op.roomID)
    }

    func testEveryKindRoundTrips() throws {
        let root = try create(policy: .init(onlyAdminsAdd: true))
        guard case .create(_, _, let policy) = try RoomOperation.decode(root.encoded()).change else { return XCTFail() }
        XCTAssertTrue(policy.onlyAdminsAdd)
        let changes: [RoomOperation.Change] = [
            .join, .setRole(Self.bob.publicKey, .admin), .setRole(Self.bob.publicKey, .owner), .rename("office"),
            .setPolicy(.init(onlyAdminsAdd: false)), .add(Self.carol.publicKey), .remove(Self.carol.publicKey)
        ]
        for change in changes {
            let op = try RoomOperation.change(change, roomID: root.roomID, after: [root], by: Self.bob, createdAt: 9)
            let decoded = try RoomOperation.decode(op.encoded())
            XCTAssertEqual(decoded, op)
            XCTAssertEqual(decoded.change, change)
        }
        XCTAssertThrowsError(
            try RoomOperation.change(
                .rename("a\u{202E}b"), roomID: root.roomID, after: [root],
                by: Self.bob, createdAt: 9))
    }

    /// A remove with a cap (features bit 7): the cap follows the target, inside the
    /// signature and the hash; a decoder tells it from an uncapped remove by the length left.
    /// Only a remove carries one.
    func testARemovalCapRoundTripsAndIsSigned() throws {
        let root = try create()
        let capped = try RoomOperation.change(
            .remove(Self.bob.publicKey), roomID: root.roomID, after: [root], by: Self.alice, createdAt: 9,
            removalCap: 0x0102_0304_0506_0708)
        let plain = try RoomOperation.change(
            .remove(Self.bob.publicKey), roomID: root.roomID, after: [root], by: Self.alice, createdAt: 9)
        let bytes = capped.encoded()
        XCTAssertEqual(bytes.count, plain.encoded().count + 8)
        XCTAssertEqual(Array(bytes[(bytes.count - 72)..<(bytes.count - 64)]), be64(0x0102_0304_0506_0708))
        let decoded = try RoomOperation.decode(bytes)
        XCTAssertEqual(decoded, capped)
        XCTAssertEqual(decoded.removalCap, 0x0102_0304_0506_0708)
        XCTAssertNil(try RoomOperation.decode(plain.encoded()).removalCap)
        XCTAssertNotEqual(capped.hash, plain.hash, "the cap is part of what the hash names")
        for i in (bytes.count - 72)..<(bytes.count - 64) {
            var tampered = bytes
            tampered[i] ^= 0x01
            assertDecodeFails(tampered, .badSignature)
        }
        // The uncapped remove's signature with 8 bytes inserted before it: the cap is not
        // signed, so the signature fails (nobody can add a cap to another's removal).
        var grafted = Array(plain.encoded().dropLast(64)) + be64(3) + Array(plain.encoded().suffix(64))
        assertDecodeFails(grafted, .badSignature)
        grafted = plain.encoded() + [0]
        assertDecodeFails(grafted, .trailingBytes(count: 1))
        XCTAssertThrowsError(
            try RoomOperation.change(
                .add(Self.carol.publicKey), roomID: root.roomID, after: [root], by: Self.alice, createdAt: 9,
                removalCap: 1)
        ) { XCTAssertEqual($0 as? RoomOperationError, .capOnNonRemove) }
    }

    func testReservedPolicyBitsAndUnknownRolesAreRejected() {
        assertDecodeFails(
            raw(body: createBody(name: Array("x".utf8), members: [Self.alice.publicKey], flags: 4)),
            .invalidPolicy(4))
        // Bit 1 (issue 30) is history shared with new members.
        let shared = try? RoomOperation.decode(
            raw(body: createBody(name: Array("x".utf8), members: [Self.alice.publicKey], flags: 3)))
        XCTAssertEqual(
            shared?.change,
            .create(name: "x", members: [Self.alice.publicKey], policy: .init(onlyAdminsAdd: true, sharedHistory: true))
        )
        let h1 = [UInt8](repeating: 1, count: 32)
        assertDecodeFails(
            raw(kind: 4, sequence: 2, parents: [h1], body: Self.carol.publicKey.bytes + [0]), .unknownRole(0))
        assertDecodeFails(
            raw(kind: 4, sequence: 2, parents: [h1], body: Self.carol.publicKey.bytes + [4]), .unknownRole(4))
        assertDecodeFails(raw(kind: 6, sequence: 2, parents: [h1], body: [0x80]), .invalidPolicy(0x80))
        XCTAssertNoThrow(try RoomOperation.decode(raw(kind: 7, sequence: 2, parents: [h1], body: [])))
    }

    func testAVersion1SignatureIsNotAVersion2Signature() {
        // The same fields signed under the old domain do not verify as version 2.
        assertDecodeFails(raw(domain: "parley-room-op-v1\0"), .badSignature)
    }

    // MARK: - docs/PROTOCOL.md

    func testDocumentedCreateOperation() throws {
        let op = try create()
        XCTAssertEqual(Sodium.hex(op.encoded()), try ProtocolDoc.hexExample("room-create"))
        XCTAssertEqual(op.hash.hex, try ProtocolDoc.hexExample("room-create-hash"))
    }
}
