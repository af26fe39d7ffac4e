import Foundation
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// The trust driver with a real store (SQLite in a temporary directory), a clock on a
/// virtual-time loop and a host that records what the driver asks of the rest of the node.
/// This node is alice; bob is a contact, mallory a LAN attacker who picks any name.
final class TrustDriverTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var directory: String!
    var store: Store!
    var seam: TrustStoreSeam!
    var alice: TestIdentity!
    var bob: TestIdentity!
    var mallory: TestIdentity!
    var host: TrustTestHost!
    var trust: TrustDriver!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        directory = try makeTestDirectory("parley-trust")
        store = try Store(directory: directory)
        seam = TrustStoreSeam(store)
        alice = try TestIdentity(name: "alice")
        bob = try TestIdentity(name: "bob")
        mallory = try TestIdentity(name: "mallory")
        host = TrustTestHost()
        trust = driver(.accept)
    }

    override func tearDownWithError() throws {
        trust = nil
        host = nil
        seam = nil
        store = nil
        _ = try? loop.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: Helpers

    private func driver(_ policy: TrustDecision.NewIdentityPolicy, log: Logger = testLogger()) -> TrustDriver {
        let d = TrustDriver(
            store: seam, directory: PeerDirectory(store: store, myName: "alice"), me: alice.identity,
            newIdentities: policy, clock: clock, log: log)
        d.host = host
        return d
    }

    private func card(
        of who: TestIdentity, name: String? = nil, sequence: UInt64, noiseKey: NoisePublicKey? = nil
    ) throws -> Card {
        try Card.issue(
            identity: who.keys.identity, noiseKey: noiseKey ?? who.keys.noiseStatic.publicKey,
            displayName: name ?? who.name, hostName: "\(who.name).local",
            issuedAt: UInt64(clock.wallMilliseconds() / 1000), sequence: sequence)
    }

    private let target = DialTargetKey(address: DialAddress(host: "192.0.2.7", port: 7744))

    /// `who` connected once and was pinned on first use.
    @discardableResult
    private func pinned(_ who: TestIdentity) throws -> PeerRecord {
        XCTAssertEqual(trust.admit(who.card, dialTarget: nil, remoteAddress: "192.0.2.9:40000"), .keep)
        return try XCTUnwrap(store.peer(identity: who.identity))
    }

    private func queue(_ body: String, to peer: IdentityPublicKey) throws {
        _ = try store.enqueue(
            [NewOutgoingMessage(id: .random(), recipient: peer, body: body, createdAt: 1)], sender: alice.identity)
    }

    private func queued(to peer: IdentityPublicKey) throws -> [String] {
        try store.pendingOutgoing(to: peer, limit: 100).map(\.body)
    }

    private func whole(_ who: TestIdentity) -> String { Fingerprint(who.identity).description }

    // MARK: The handshake's trust outcome

    func testANewKeyIsPinnedOnFirstUseAndAnnounced() throws {
        XCTAssertEqual(trust.admit(bob.card, dialTarget: target, remoteAddress: "192.0.2.7:51000"), .keep)
        let rec = try XCTUnwrap(store.peer(identity: bob.identity))
        XCTAssertEqual(rec.trust, .pinned)
        XCTAssertEqual(rec.noiseKey, bob.card.noiseKey)
        XCTAssertEqual(rec.lastAddress, "192.0.2.7:7744", "where it was dialled")
        XCTAssertEqual(host.newPeers.map(\.0.identity), [bob.identity])
        XCTAssertEqual(host.newPeers.first?.1, "192.0.2.7:7744")
        XCTAssertEqual(trust.admit(bob.card, dialTarget: nil, remoteAddress: "x"), .keep, "the same card again")
        XCTAssertEqual(host.newPeers.count, 1, "announced once")
    }

    func testTheHoldPolicyRecordsANewKeyAndRefusesItsSessionsUntilAccepted() throws {
        trust = driver(.hold)
        XCTAssertEqual(
            trust.admit(bob.card, dialTarget: nil, remoteAddress: "192.0.2.7:51000"),
            .refuse(.notTrusted, "awaiting approval"))
        XCTAssertEqual(try store.peer(identity: bob.identity)?.trust, .pending)
        XCTAssertEqual(host.newPeers.map(\.1), ["192.0.2.7:51000"], "announced, so a person can accept it")
        XCTAssertEqual(
            trust.admit(bob.card, dialTarget: nil, remoteAddress: "x"), .refuse(.notTrusted, "awaiting approval"))

        try store.rememberAddress("192.0.2.7:7744", of: bob.identity, at: 1)
        let accepted = try trust.accept(try XCTUnwrap(store.peer(identity: bob.identity)))
        XCTAssertEqual(accepted.trust, .pinned)
        XCTAssertEqual(host.remembered.map(\.1), [["192.0.2.7:7744"]], "its addresses dialled")
        XCTAssertEqual(host.redialed, [bob.identity])
        XCTAssertEqual(trust.admit(bob.card, dialTarget: nil, remoteAddress: "x"), .keep)
        XCTAssertThrowsError(try trust.accept(accepted), "only a held key is accepted")
    }

    func testABlockedKeyIsRefusedAndNotLoggedAsAnAttack() throws {
        _ = try trust.block(try pinned(bob))
        XCTAssertEqual(trust.admit(bob.card, dialTarget: nil, remoteAddress: "x"), .refuse(.notTrusted, "blocked"))
        XCTAssertEqual(host.attacks.count, 0, "a person's choice, not an attack")
    }

    func testAFormerContactsReplacedKeyIsRefusedAndLogged() throws {
        let old = try pinned(bob)
        try pinned(mallory)
        _ = try trust.replaceKey(of: old, newFingerprint: whole(mallory), safetyNumber: nil)
        XCTAssertEqual(
            trust.admit(bob.card, dialTarget: nil, remoteAddress: "192.0.2.9:1"),
            .refuse(.notTrusted, "key was replaced"))
        XCTAssertEqual(host.attacks.map(\.message), ["a key a person replaced tried to connect"])
        XCTAssertEqual(try store.peer(identity: bob.identity)?.replacedBy, mallory.identity, "still replaced")
    }

    func testAStaleOrConflictingCardIsRefusedAndThePinStays() throws {
        XCTAssertEqual(trust.admit(try card(of: bob, sequence: 2), dialTarget: nil, remoteAddress: "x"), .keep)
        let pin = try XCTUnwrap(store.peer(identity: bob.identity))
        XCTAssertEqual(
            trust.admit(try card(of: bob, sequence: 1), dialTarget: nil, remoteAddress: "x"),
            .refuse(.notTrusted, "stale card"))
        XCTAssertEqual(
            trust.admit(try card(of: bob, name: "bobby", sequence: 2), dialTarget: nil, remoteAddress: "x"),
            .refuse(.notTrusted, "conflicting card"))
        XCTAssertEqual(try store.peer(identity: bob.identity), pin, "nothing recorded")
        XCTAssertEqual(host.attacks.count, 2)
        XCTAssertEqual(
            trust.admit(try card(of: bob, name: "Bob", sequence: 3), dialTarget: nil, remoteAddress: "x"), .keep)
        XCTAssertEqual(try store.peer(identity: bob.identity)?.displayName, "Bob", "a newer card is pinned")
    }

    /// A LAN attacker names itself like a contact: a new peer, never the contact.
    func testANameClashNeverMakesANewKeyStandForAKnownOne() throws {
        let bobPin = try pinned(bob)
        XCTAssertEqual(
            trust.admit(try card(of: mallory, name: "bob", sequence: 1), dialTarget: nil, remoteAddress: "x"), .keep)
        XCTAssertEqual(try store.peer(identity: bob.identity), bobPin, "the contact's pin is untouched")
        XCTAssertEqual(try store.peer(identity: mallory.identity)?.trust, .pinned, "a new, separate peer")
        XCTAssertEqual(trust.directory.nameClashes()[mallory.identity]?.with, [bob.identity])
        XCTAssertThrowsError(try trust.directory.resolve("bob")) { error in
            guard case NodeError.peerAmbiguous = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(
            try trust.verify(
                try XCTUnwrap(store.peer(identity: mallory.identity)), fingerprint: whole(bob)),
            "the contact's fingerprint does not verify the look-alike")
    }

    /// A look-alike name is said in the log, whether a new key brings it or a known key
    /// renames itself into it (still itself: only the name is marked).
    func testALookAlikeNameIsLoggedWhenANewKeyBringsItOrAKnownKeyTakesIt() throws {
        let lines = LockedLines()
        trust = driver(
            .accept,
            log: Logger(label: "trust-test") { _ in
                ParleyLogHandler(
                    format: .human, level: SharedLogLevel(.warning), output: LogOutput(sink: { lines.append($0) }))
            })
        try pinned(bob)
        try pinned(mallory)
        XCTAssertTrue(lines.matching("looks like another peer's").isEmpty, "distinct names")
        let link = TrustTestLink(peer: mallory.identity)
        XCTAssertEqual(
            trust.received(card: try card(of: mallory, name: "b\u{043E}b", sequence: 2).encoded(), on: link), .pinned)
        XCTAssertEqual(lines.matching("renamed itself; its new name looks like another peer's").count, 1)
        XCTAssertEqual(try store.peer(identity: bob.identity)?.displayName, "bob", "bob is still bob")
        let carol = try TestIdentity(name: "carol")
        XCTAssertEqual(
            trust.admit(try card(of: carol, name: "Bob", sequence: 1), dialTarget: nil, remoteAddress: "x"), .keep)
        XCTAssertEqual(lines.matching("new peer pinned; its name looks like another peer's").count, 1)
    }

    // MARK: Card updates on a live session

    func testACardUpdateIsPinnedOnlyWhenNewerAndItsOwn() throws {
        try pinned(bob)
        let link = TrustTestLink(peer: bob.identity)
        XCTAssertEqual(trust.received(card: bob.card.encoded(), on: link), .ignored)
        let renamed = try card(of: bob, name: "Robert", sequence: 2, noiseKey: NoiseStaticKeyPair.generate().publicKey)
        XCTAssertEqual(trust.received(card: renamed.encoded(), on: link), .pinned)
        XCTAssertEqual(try store.peer(identity: bob.identity)?.noiseKey, renamed.noiseKey)
        XCTAssertEqual(try store.peer(identity: bob.identity)?.displayName, "Robert")
        XCTAssertNil(link.closed)
    }

    func testACardUpdateForAnotherIdentityClosesTheSessionAndChangesNothing() throws {
        let bobPin = try pinned(bob)
        let malloryPin = try pinned(mallory)
        let link = TrustTestLink(peer: bob.identity)
        let forged = try card(of: mallory, name: "bob", sequence: 9)
        XCTAssertEqual(trust.received(card: forged.encoded(), on: link), .otherIdentity)
        XCTAssertEqual(link.closed?.0, .protocolError)
        XCTAssertEqual(try store.peer(identity: bob.identity), bobPin)
        XCTAssertEqual(try store.peer(identity: mallory.identity), malloryPin)
        XCTAssertEqual(host.attacks.map(\.message), ["card update for another identity refused"])

        let other = TrustTestLink(peer: bob.identity)
        XCTAssertEqual(trust.received(card: [1, 2, 3], on: other), .undecodable)
        XCTAssertEqual(other.closed?.0, .protocolError)
    }

    func testACardUpdateTheStoreCannotReadIsReportedNotPinned() throws {
        try pinned(bob)
        seam.failPeerReads = true
        let link = TrustTestLink(peer: bob.identity)
        guard case .notRecorded = trust.received(card: try card(of: bob, sequence: 2).encoded(), on: link) else {
            return XCTFail("a store failure is its own outcome")
        }
        XCTAssertNil(link.closed, "the session stays: the peer did nothing wrong")
        seam.failPeerReads = false
        XCTAssertEqual(try store.peer(identity: bob.identity)?.cardSequence, 1)
    }

    // MARK: Replacing a key

    func testReplacingAKeyMovesTheQueueToTheNewKeyAndEndsTheOldSession() throws {
        let old = try trust.setNickname(try pinned(bob), "Bob at work")
        try pinned(mallory)
        try queue("the door code is 4711", to: bob.identity)
        let (new, moved) = try trust.replaceKey(
            of: old, newFingerprint: whole(mallory),
            safetyNumber: SafetyNumber.compute(alice.identity, mallory.identity))
        XCTAssertEqual(moved, 1)
        XCTAssertEqual(new.identity, mallory.identity)
        XCTAssertEqual(new.trust, .verified)
        XCTAssertEqual(new.nickname, "Bob at work", "the person's name for the contact moves with it")
        XCTAssertEqual(try queued(to: mallory.identity), ["the door code is 4711"])
        XCTAssertEqual(try queued(to: bob.identity), [])
        XCTAssertEqual(try store.peer(identity: bob.identity)?.replacedBy, mallory.identity)
        XCTAssertEqual(host.closed.map(\.peer), [bob.identity])
        XCTAssertEqual(host.replaced.map(\.new), [mallory.identity])
        XCTAssertEqual(host.outboxChanges, 1)
        XCTAssertEqual(try trust.directory.resolve("Bob at work").identity, mallory.identity)
        XCTAssertEqual(try trust.resolveIncludingReplaced(whole(bob)).identity, bob.identity, "its history readable")
        XCTAssertEqual(try trust.previousKeys(of: new).map(\.identity), [bob.identity])
    }

    /// Nothing changes unless the person named the whole new key and read its safety number.
    func testAReplacementWithAShortOrWrongFingerprintOrSafetyNumberChangesNothing() throws {
        let old = try pinned(bob)
        let stranger = try TestIdentity(name: "stranger")
        try pinned(mallory)
        try queue("hello", to: bob.identity)
        let before = try store.peers()
        let short = String(whole(mallory).prefix(9))
        let wrongNumber = SafetyNumber.compute(alice.identity, bob.identity)
        let attempts: [(String, String?, (NodeError) -> Bool)] = [
            (short, nil, { if case .fingerprintTooShort = $0 { true } else { false } }),
            (whole(stranger), nil, { if case .newKeyNotFound = $0 { true } else { false } }),
            ("not a fingerprint!", nil, { if case .fingerprintMismatch = $0 { true } else { false } }),
            (whole(bob), nil, { if case .notApplicable = $0 { true } else { false } }),
            (whole(mallory), wrongNumber, { if case .safetyNumberMismatch = $0 { true } else { false } }),
            (whole(mallory), "", { if case .safetyNumberMismatch = $0 { true } else { false } })
        ]
        for (fingerprint, number, expected) in attempts {
            XCTAssertThrowsError(try trust.replaceKey(of: old, newFingerprint: fingerprint, safetyNumber: number)) {
                XCTAssertTrue(expected($0 as! NodeError), "\(fingerprint) \(number ?? "-"): \($0)")
            }
        }
        XCTAssertEqual(try store.peers(), before, "no record changed")
        XCTAssertEqual(try queued(to: bob.identity), ["hello"], "the queue stays")
        XCTAssertTrue(host.closed.isEmpty && host.replaced.isEmpty)
    }

    func testAReplacedKeyCannotStandForAnotherContact() throws {
        let old = try pinned(bob)
        let carol = try TestIdentity(name: "carol")
        let carolPin = try pinned(carol)
        try pinned(mallory)
        _ = try trust.replaceKey(of: old, newFingerprint: whole(mallory), safetyNumber: nil)
        XCTAssertThrowsError(try trust.replaceKey(of: carolPin, newFingerprint: whole(bob), safetyNumber: nil)) {
            guard case NodeError.notApplicable = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try trust.replaceKey(of: old, newFingerprint: whole(carol), safetyNumber: nil)) {
            guard case NodeError.peerReplaced = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertNil(try store.peer(identity: carol.identity)?.replacedBy)
    }

    /// A nickname is the strongest name: one that looks like another key's name (a script
    /// in the page may call `peers.nickname`) would make "bob" find mallory.
    func testANicknameThatLooksLikeAnotherKeysNameIsRefused() throws {
        let bobPin = try pinned(bob)
        let malloryPin = try pinned(mallory)
        for name in ["bob", "Bob", "b\u{043E}b", "alice"] {
            XCTAssertThrowsError(try trust.setNickname(malloryPin, name), name) {
                guard case NodeError.notApplicable = $0 else { return XCTFail("\($0)") }
            }
        }
        XCTAssertNil(try store.peer(identity: mallory.identity)?.nickname, "nothing was changed")
        XCTAssertEqual(try trust.directory.resolve("bob").identity, bob.identity)
        XCTAssertEqual(try trust.setNickname(bobPin, "Bob").nickname, "Bob", "its own name, another case: fine")
        XCTAssertEqual(try trust.setNickname(malloryPin, "Mallory (lab)").nickname, "Mallory (lab)")
        XCTAssertEqual(try trust.setNickname(malloryPin, nil).nickname, nil)
    }

    // MARK: Verify, block, unblock, forget

    func testVerifyNeedsThePeersWholeFingerprint() throws {
        let rec = try pinned(bob)
        XCTAssertThrowsError(try trust.verify(rec, fingerprint: String(whole(bob).prefix(14)))) {
            guard case NodeError.fingerprintTooShort = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try trust.verify(rec, fingerprint: whole(mallory))) {
            guard case NodeError.fingerprintMismatch = $0 else { return XCTFail("\($0)") }
        }
        XCTAssertEqual(try store.peer(identity: bob.identity)?.trust, .pinned)
        XCTAssertEqual(try trust.verify(rec, fingerprint: whole(bob).uppercased()).trust, .verified)
    }

    func testBlockEndsTheSessionAndStopsDiallingUnblockDialsAgain() throws {
        let rec = try pinned(bob)
        XCTAssertThrowsError(try trust.unblock(rec), "not blocked")
        let blocked = try trust.block(rec)
        XCTAssertEqual(blocked.trust, .blocked)
        XCTAssertEqual(try store.peer(identity: bob.identity)?.trust, .blocked)
        XCTAssertEqual(host.closed.map(\.text), ["blocked"])
        XCTAssertEqual(host.stoppedDialing, [bob.identity])
        let unblocked = try trust.unblock(blocked)
        XCTAssertEqual(unblocked.trust, .pinned)
        XCTAssertEqual(host.redialed, [bob.identity])
        XCTAssertEqual(trust.admit(bob.card, dialTarget: nil, remoteAddress: "x"), .keep)
    }

    /// The block committed, so its session must end even when the record cannot be read
    /// back, and the answer must not say the block failed.
    func testABlockWhoseRecordCannotBeReadBackStillEndsTheSession() throws {
        let rec = try pinned(bob)
        seam.failPeerReads = true
        XCTAssertEqual(try trust.block(rec).trust, .blocked)
        XCTAssertEqual(host.closed.map(\.peer), [bob.identity])
        XCTAssertEqual(host.stoppedDialing, [bob.identity])
        seam.failPeerReads = false
        XCTAssertEqual(try store.peer(identity: bob.identity)?.trust, .blocked)
    }

    func testForgetDropsThePinSoTheNextContactIsAFirstOne() throws {
        let rec = try pinned(bob)
        XCTAssertEqual(try trust.forget(rec).map(\.identity), [], "it had replaced no key: none blocked")
        XCTAssertNil(try store.peer(identity: bob.identity))
        XCTAssertEqual(host.closed.map(\.text), ["forgotten"])
        XCTAssertEqual(host.stoppedDialing, [bob.identity])
        XCTAssertThrowsError(try trust.directory.resolve("bob"), "the cache forgot it too")
        XCTAssertEqual(trust.admit(bob.card, dialTarget: nil, remoteAddress: "x"), .keep)
        XCTAssertEqual(host.newPeers.count, 2, "pinned anew, announced anew")
    }

    /// A former contact's retired key (a lost or stolen device's) must not become current,
    /// and trusted, again when the person forgets the key that replaced it.
    func testForgettingANewKeyNeverReinstatesTheKeyItReplaced() throws {
        let old = try trust.verify(try pinned(bob), fingerprint: whole(bob))
        try pinned(mallory)
        let (new, _) = try trust.replaceKey(of: old, newFingerprint: whole(mallory), safetyNumber: nil)
        let blocked = try trust.forget(new)
        // The answer names the key it blocked, as stored now (trust.forget's `blocked`).
        XCTAssertEqual(blocked.map(\.identity), [bob.identity])
        XCTAssertEqual(blocked.map(\.trust), [.blocked])
        XCTAssertEqual(
            trust.admit(bob.card, dialTarget: nil, remoteAddress: "192.0.2.66:1"), .refuse(.notTrusted, "blocked"))
        XCTAssertEqual(try store.peer(identity: bob.identity)?.trust, .blocked)
        XCTAssertEqual(try trust.directory.resolve("bob").sendRefusal.map { "\($0)" }?.contains("blocked"), true)
    }
}

/// Stands in for the node: records what the trust driver asks of it.
final class TrustTestHost: TrustHost {
    var newPeers: [(PeerRecord, String?)] = []
    var attacks: [(key: String, message: String)] = []
    var closed: [(peer: IdentityPublicKey, reason: CloseReason, text: String)] = []
    var redialed: [IdentityPublicKey] = []
    var stoppedDialing: [IdentityPublicKey] = []
    var remembered: [(IdentityPublicKey, [String])] = []
    var replaced: [(old: IdentityPublicKey, new: IdentityPublicKey)] = []
    var outboxChanges = 0

    func emit(_ e: NodeEvent) {
        if case .newPeer(let rec, let address) = e { newPeers.append((rec, address)) }
    }
    func logAttack(key: String, _ message: String, _ fields: [String: String]) { attacks.append((key, message)) }
    func closeSession(of peer: IdentityPublicKey, reason: CloseReason, text: String) {
        closed.append((peer, reason, text))
    }
    func redialNow(_ peer: IdentityPublicKey) { redialed.append(peer) }
    func stopDialingRemembered(_ peer: IdentityPublicKey) { stoppedDialing.append(peer) }
    func rememberAddresses(of peer: IdentityPublicKey, _ addresses: [String]) { remembered.append((peer, addresses)) }
    func keyReplaced(old: IdentityPublicKey, new: IdentityPublicKey) { replaced.append((old, new)) }
    func outboxChanged() { outboxChanges += 1 }
}

/// A session's link that records how it was closed.
final class TrustTestLink: TrustLink {
    let remoteIdentityKey: IdentityPublicKey?
    let remoteAddress = "192.0.2.7:51000"
    var closed: (CloseReason, String)?
    init(peer: IdentityPublicKey) { remoteIdentityKey = peer }
    func close(reason: CloseReason, text: String) { closed = (reason, text) }
}

/// A real store behind the `TrustStore` seam whose reads of one peer fail when told.
final class TrustStoreSeam: TrustStore {
    let inner: Store
    var failPeerReads = false
    init(_ inner: Store) { self.inner = inner }

    func peer(identity: IdentityPublicKey) throws(StoreError) -> PeerRecord? {
        if failPeerReads { throw StoreError.io(path: "test", reason: "read failed") }
        return try inner.peer(identity: identity)
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
    func rememberedAddresses() throws(StoreError) -> [IdentityPublicKey: [String]] {
        try inner.rememberedAddresses()
    }
}
