import ParleyCore
import XCTest

@testable import ParleyNodeCore

final class SessionTieBreakTests: XCTestCase {
    let small = identity(1)
    let large = identity(9)
    let boot = [UInt8](repeating: 7, count: 16)

    func side(_ d: ConnectionDirection, boot b: [UInt8]? = nil) -> SessionTieBreak.Side {
        SessionTieBreak.Side(direction: d, remoteBootID: b ?? boot)
    }

    /// Every combination, seen from both ends: the two nodes always keep the same
    /// connection (the one the smaller key initiated), or both keep the older one.
    func testMatrixBothSidesAgree() {
        // A connection is named by its initiator. From the small node's view an outbound
        // connection was initiated by small; from the large node's view it is inbound.
        for newBySmall in [true, false] {
            for oldBySmall in [true, false] {
                let atSmall = SessionTieBreak.keepNew(
                    side(newBySmall ? .outbound : .inbound),
                    over: side(oldBySmall ? .outbound : .inbound),
                    me: small, peer: large)
                let atLarge = SessionTieBreak.keepNew(
                    side(newBySmall ? .inbound : .outbound),
                    over: side(oldBySmall ? .inbound : .outbound),
                    me: large, peer: small)
                XCTAssertEqual(atSmall, atLarge, "new by small: \(newBySmall), old by small: \(oldBySmall)")
                if newBySmall != oldBySmall {
                    XCTAssertEqual(atSmall, newBySmall, "the smaller key's connection is kept")
                } else {
                    XCTAssertFalse(atSmall, "same initiator twice: the older stays")
                }
            }
        }
    }

    func testAPeerRestartAlwaysReplacesTheOldSession() {
        let restarted = [UInt8](repeating: 8, count: 16)
        // Even a connection the rule would otherwise lose.
        XCTAssertTrue(
            SessionTieBreak.keepNew(
                side(.inbound, boot: restarted), over: side(.outbound),
                me: small, peer: large))
    }
}

final class SessionTableTests: XCTestCase {
    let me = identity(1)
    let bob = identity(5)
    let clock = ManualNodeClock()
    let boot = [UInt8](repeating: 3, count: 16)

    func testFirstSessionActivatesAndAnnouncesOnline() {
        var t = SessionTable<Int>(me: me)
        let a = t.established(1, peer: bob, side: .init(direction: .outbound, remoteBootID: boot))
        XCTAssertEqual(a, [.activate(1), .peerOnline(bob)])
        XCTAssertEqual(t.handle(for: bob), 1)
    }

    func testDuplicateLoserIsClosedAndPresenceDoesNotFlap() {
        var t = SessionTable<Int>(me: me)
        _ = t.established(1, peer: bob, side: .init(direction: .outbound, remoteBootID: boot))
        // Same run, inbound (initiated by bob, the larger key): loses against ours.
        XCTAssertEqual(
            t.established(2, peer: bob, side: .init(direction: .inbound, remoteBootID: boot)),
            [.closeDuplicate(2)])
        XCTAssertEqual(t.handle(for: bob), 1)
        // Bob restarted: his new connection replaces ours, no second "online".
        let restarted = [UInt8](repeating: 4, count: 16)
        XCTAssertEqual(
            t.established(3, peer: bob, side: .init(direction: .inbound, remoteBootID: restarted)),
            [.closeDuplicate(1), .activate(3)])
        // The replaced session's close changes nothing.
        XCTAssertEqual(t.closed(1, peer: bob, peerKeptAnother: false, stopping: false, now: clock.now), [])
        XCTAssertTrue(t.isOnline(bob))
    }

    func testOfflineIsDebouncedWhenThePeerKeptAnotherSession() {
        var t = SessionTable<Int>(me: me, offlineDebounce: .seconds(2))
        _ = t.established(1, peer: bob, side: .init(direction: .inbound, remoteBootID: boot))
        let a = t.closed(1, peer: bob, peerKeptAnother: true, stopping: false, now: clock.now)
        XCTAssertEqual(a, [.scheduleOfflineCheck(bob, at: clock.now + .seconds(2))])
        // The other session arrives within the debounce: no online/offline pair at all.
        XCTAssertEqual(
            t.established(2, peer: bob, side: .init(direction: .outbound, remoteBootID: boot)), [.activate(2)])
        clock.advance(.seconds(2))
        XCTAssertEqual(t.offlineCheckDue(peer: bob, now: clock.now), [])
        XCTAssertTrue(t.isOnline(bob))
    }

    func testOfflineFiresAfterTheDebounceWhenNoSessionCame() {
        var t = SessionTable<Int>(me: me, offlineDebounce: .seconds(2))
        _ = t.established(1, peer: bob, side: .init(direction: .inbound, remoteBootID: boot))
        _ = t.closed(1, peer: bob, peerKeptAnother: true, stopping: false, now: clock.now)
        clock.advance(.milliseconds(1_999))
        XCTAssertEqual(t.offlineCheckDue(peer: bob, now: clock.now), [], "a timer that fires early changes nothing")
        clock.advance(.milliseconds(1))
        XCTAssertEqual(t.offlineCheckDue(peer: bob, now: clock.now), [.peerOffline(bob)])
        XCTAssertEqual(t.offlineCheckDue(peer: bob, now: clock.now), [], "once")
    }

    func testPlainCloseIsOfflineAtOnceAndALocalShutdownReportsNoPresence() {
        var t = SessionTable<Int>(me: me)
        _ = t.established(1, peer: bob, side: .init(direction: .inbound, remoteBootID: boot))
        XCTAssertEqual(
            t.closed(1, peer: bob, peerKeptAnother: true, stopping: true, now: clock.now), [],
            "our own shutdown is not the peer going offline")
        XCTAssertEqual(t.count, 0)
        _ = t.established(2, peer: bob, side: .init(direction: .inbound, remoteBootID: boot))
        XCTAssertEqual(
            t.closed(2, peer: bob, peerKeptAnother: false, stopping: false, now: clock.now), [.peerOffline(bob)])
        XCTAssertEqual(t.closed(2, peer: nil, peerKeptAnother: false, stopping: false, now: clock.now), [])
    }

    func testTheCapCountsPeersNotConnections() {
        var t = SessionTable<Int>(me: me, maxSessions: 2)
        _ = t.established(1, peer: identity(2), side: .init(direction: .inbound, remoteBootID: boot))
        _ = t.established(2, peer: identity(3), side: .init(direction: .inbound, remoteBootID: boot))
        XCTAssertFalse(t.hasRoom(for: identity(4)))
        XCTAssertEqual(
            t.established(3, peer: identity(4), side: .init(direction: .inbound, remoteBootID: boot)), [.refuseFull(3)])
        XCTAssertTrue(t.hasRoom(for: identity(3)), "a peer already online may replace its session")
        let other = [UInt8](repeating: 9, count: 16)
        XCTAssertEqual(
            t.established(4, peer: identity(3), side: .init(direction: .inbound, remoteBootID: other)),
            [.closeDuplicate(2), .activate(4)])
    }
}
