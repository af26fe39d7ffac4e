import ParleyNodeCore
import XCTest

/// docs/PROTOCOL.md "Liveness" (issue 21: 1,000 quiet sessions, ≤ 2 wake-ups/s): a ping only
/// after a long silence, one per interval, dead when it stays unanswered for `deadAfter`;
/// one daemon-wide sweep pings every due session in the same wake-up.
final class KeepalivePolicyTests: XCTestCase {
    let clock = ManualNodeClock()
    typealias Liveness = KeepalivePolicy.SessionLiveness

    func testDefaultsPingAfterTenMinutesAndTickEveryFiveSeconds() {
        let p = KeepalivePolicy()
        XCTAssertEqual(p.pingInterval, .seconds(600))
        XCTAssertEqual(p.deadAfter, .seconds(15))
        XCTAssertEqual(p.tickInterval, .seconds(5), "0.2 wake-ups/s whatever the number of sessions")
        XCTAssertEqual(KeepalivePolicy(pingInterval: .seconds(1), deadAfter: .seconds(3)).tickInterval, .seconds(1) / 3)
        XCTAssertEqual(
            KeepalivePolicy(pingInterval: .milliseconds(100), deadAfter: .milliseconds(300)).tickInterval,
            .milliseconds(100), "never busier than ten times a second")
        XCTAssertEqual(
            KeepalivePolicy(pingInterval: .seconds(60), deadAfter: .seconds(120)).tickInterval, .seconds(5),
            "never lazier than 5 s: the tick also resends after an ack timeout")
    }

    func testAQuietButAnsweringPeerIsPingedOncePerIntervalAndNeverDead() {
        let p = KeepalivePolicy()
        var s = Liveness(lastReceived: clock.now)
        var pings = 0
        // An hour in 5 s ticks; the peer answers each ping 10 ms later.
        for _ in 0..<(3600 / 5) {
            clock.advance(.seconds(5))
            switch p.check(s, now: clock.now) {
            case .ping:
                pings += 1
                s.pinged(at: clock.now)
                s.lastReceived = clock.now + .milliseconds(10)
            case .dead: XCTFail("an answering peer is never dead")
            case .healthy: break
            }
        }
        // 600 s of silence, then the next tick: 600, 1205, 1810, 2415, 3020 s.
        XCTAssertEqual(pings, 5, "one ping per 600 s of silence, never one per tick")
    }

    func testASilentPeerGetsOnePingPerIntervalNotPerTickAndDiesDeadAfterTheFirst() {
        let p = KeepalivePolicy(pingInterval: .seconds(5), deadAfter: .seconds(15))
        let start = clock.now
        var s = Liveness(lastReceived: start)
        var pings: [Duration] = []
        while true {
            clock.advance(p.tickInterval)
            let verdict = p.check(s, now: clock.now)
            if verdict == .dead { break }
            if verdict == .ping {
                pings.append(clock.now - start)
                s.pinged(at: clock.now)
            }
            XCTAssertLessThan(clock.now - start, .seconds(30), "a silent peer must die")
        }
        // Ticks of 5/3 s: pings at 6.7, 13.3 and 20 s, dead at the first tick past 6.7 + 15 s.
        XCTAssertEqual(pings.count, 3, "\(pings)")
        XCTAssertLessThanOrEqual(pings[0], .seconds(5) + p.tickInterval)
        XCTAssertEqual(s.unansweredSince, start + pings[0], "the first unanswered ping counts")
        XCTAssertGreaterThan(clock.now - (start + pings[0]), .seconds(15))
        XCTAssertLessThanOrEqual(clock.now - (start + pings[0]), .seconds(15) + p.tickInterval)
    }

    func testUnansweredIsExactlyDeadAfterNotBefore() {
        let p = KeepalivePolicy(pingInterval: .seconds(600), deadAfter: .seconds(15))
        var s = Liveness(lastReceived: clock.now)
        clock.advance(.seconds(600))
        XCTAssertEqual(p.check(s, now: clock.now), .ping)
        s.pinged(at: clock.now)
        clock.advance(.seconds(15))
        XCTAssertEqual(p.check(s, now: clock.now), .healthy, "15 s is not past 15 s")
        clock.advance(.milliseconds(1))
        XCTAssertEqual(p.check(s, now: clock.now), .dead)
    }

    /// Anything received after the ping answers it (a pong, a message, an older peer's own ping).
    func testAnyTrafficAfterThePingAnswersIt() {
        let p = KeepalivePolicy(pingInterval: .seconds(600), deadAfter: .seconds(15))
        var s = Liveness(lastReceived: clock.now)
        clock.advance(.seconds(600))
        s.pinged(at: clock.now)
        clock.advance(.seconds(14))
        s.lastReceived = clock.now
        clock.advance(.seconds(60))
        XCTAssertEqual(p.check(s, now: clock.now), .healthy)
        // The next silence starts a new count: a later ping gets its own deadAfter.
        clock.advance(.seconds(540))
        XCTAssertEqual(p.check(s, now: clock.now), .ping)
        s.pinged(at: clock.now)
        XCTAssertEqual(s.unansweredSince, clock.now)
    }

    /// An older peer (pings every 5 s) keeps the session busy: we never ping it and it never dies.
    func testAnOlderPeerThatPingsEveryFiveSecondsIsNeverPinged() {
        let p = KeepalivePolicy()
        var s = Liveness(lastReceived: clock.now)
        for _ in 0..<1_000 {
            clock.advance(.seconds(5))
            s.lastReceived = clock.now
            XCTAssertEqual(p.check(s, now: clock.now), .healthy)
        }
    }

    /// 1,000 sessions that fell silent at different times: each tick's sweep pings all that
    /// are due at once, so the pings of an hour cost the tick's wake-ups and no more.
    func testOneSweepPerTickBatchesEveryDueSession() {
        let p = KeepalivePolicy()
        let start = clock.now
        var sessions: [(Int, Liveness)] = (0..<1_000).map { i in
            (i, Liveness(lastReceived: start + .milliseconds(Int64(i) * 600)))  // spread over 600 s
        }
        var ticksWithPings = 0
        var pinged = Set<Int>()
        var ticks = 0
        while clock.now - start < .seconds(1_200) {
            clock.advance(p.tickInterval)
            ticks += 1
            let sweep = p.sweep(sessions, now: clock.now)
            XCTAssertEqual(sweep.dead, [])
            if !sweep.ping.isEmpty { ticksWithPings += 1 }
            for i in sweep.ping {
                pinged.insert(i)
                sessions[i].1.pinged(at: clock.now)
                sessions[i].1.lastReceived = clock.now  // the pongs arrive in the same wake-up's burst
            }
        }
        XCTAssertEqual(pinged.count, 1_000)
        XCTAssertEqual(ticks, 240)
        XCTAssertLessThanOrEqual(ticksWithPings, 121, "pings ride on the ticks; no timer per session")
        // A sweep over a session both dead and due reports it dead only.
        var dead = Liveness(lastReceived: start)
        dead.pinged(at: start + .seconds(600))
        let one = p.sweep([(7, dead)], now: start + .seconds(616))
        XCTAssertEqual(one.dead, [7])
        XCTAssertEqual(one.ping, [])
    }

    func testKernelKeepaliveProbesThirdsOfDeadAfter() {
        let k = KernelKeepalive(deadAfter: .seconds(15))
        XCTAssertEqual(k.idleSeconds, 5)
        XCTAssertEqual(k.intervalSeconds, 5)
        XCTAssertEqual(k.probeCount, 3)
        XCTAssertEqual(k.userTimeoutMilliseconds, 15_000)
        XCTAssertEqual(k.worstDetection, .seconds(15))
        // The lab's setting (dead after 3 s): a probe a second.
        let lab = KernelKeepalive(deadAfter: .seconds(3))
        XCTAssertEqual([lab.idleSeconds, lab.intervalSeconds], [1, 1])
        XCTAssertEqual(lab.worstDetection, .seconds(3))
        // The kernel counts whole seconds: never 0 (which it would refuse), rounded up.
        let short = KernelKeepalive(deadAfter: .milliseconds(300))
        XCTAssertEqual([short.idleSeconds, short.intervalSeconds], [1, 1])
        XCTAssertEqual(short.userTimeoutMilliseconds, 300)
        let odd = KernelKeepalive(deadAfter: .milliseconds(10_000))
        XCTAssertEqual(odd.idleSeconds, 4)
        XCTAssertEqual(odd.worstDetection, .seconds(12), "rounded up to whole seconds")
        // An hour (the configuration's maximum) stays in range.
        XCTAssertEqual(KernelKeepalive(deadAfter: .seconds(3600)).idleSeconds, 1200)
    }
}
