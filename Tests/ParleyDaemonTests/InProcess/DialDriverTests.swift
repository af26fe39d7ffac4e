import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// The dialling driver on a virtual-time loop: what the planner decides is performed
/// (connections opened, redial timers armed and cancelled), and `connect --wait` hears
/// how the dial ended.
final class DialDriverTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var driver: DialDriver!
    var opened: [(DialTargetKey, DialAddress)] = []

    var directory: String!

    override func setUp() {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        directory = try! makeTestDirectory("parley-dial")
        driver = DialDriver(
            planner: DialPlanner(
                backoff: RedialBackoff(initial: .milliseconds(500), maximum: .seconds(30))),
            loop: loop, clock: clock, random: LowestRandom(), store: try! Store(directory: directory),
            log: testLogger(), attackLog: RateLimitedLog(logger: testLogger(), level: .warning, interval: .seconds(60)))
        opened = []
        driver.open = { [unowned self] key, address, _ in self.opened.append((key, address)) }
    }

    override func tearDown() {
        _ = try? loop.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private var address: DialAddress { DialAddress(host: "192.0.2.7", port: 7744) }

    func testAFailedDialIsRetriedWhenItsTimerFiresOnTheMockClock() {
        driver.perform(driver.planner.addConfigured(address, sessions: driver.sessions()))
        XCTAssertEqual(opened.count, 1)
        let key = opened[0].0
        driver.attemptFailed(key, "connection refused")
        XCTAssertEqual(driver.armedRedials, 1)
        loop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(opened.count, 1, "not before the backoff")
        loop.advanceTime(by: .seconds(30))
        XCTAssertEqual(opened.count, 2)
        XCTAssertEqual(opened[1].1, address)
        XCTAssertEqual(driver.armedRedials, 0)
    }

    func testStoppingCancelsEveryArmedRedial() {
        driver.perform(driver.planner.addConfigured(address, sessions: driver.sessions()))
        driver.attemptFailed(opened[0].0, "connection refused")
        XCTAssertEqual(driver.armedRedials, 1)
        driver.perform(driver.planner.stop())
        XCTAssertEqual(driver.armedRedials, 0)
        loop.advanceTime(by: .seconds(60))
        XCTAssertEqual(opened.count, 1, "nothing is dialled after stop")
    }

    func testAWatcherHearsTheOutcomeOnceAndACancelledOneNever() {
        driver.perform(driver.planner.addConfigured(address, sessions: driver.sessions()))
        let key = opened[0].0
        var heard: [String] = []
        var cancelledHeard = 0
        _ = driver.watch(key) { outcome in
            if case .failed(let why) = outcome { heard.append(why) }
        }
        let token = driver.watch(key) { _ in cancelledHeard += 1 }
        driver.cancelWatch(key, token: token)
        driver.attemptFailed(key, "connection refused")
        loop.advanceTime(by: .seconds(30))
        driver.attemptFailed(key, "again")
        XCTAssertEqual(heard, ["connection refused"])
        XCTAssertEqual(cancelledHeard, 0)
    }

    /// A refusal by the peer's trust counts as three failures: the retry already armed
    /// keeps its time, and every later one waits longer than after plain failures.
    func testARefusalByThePeersTrustBacksOffHarder() {
        func secondRetryWithin(_ wait: TimeAmount, refusedByTrust: Bool) -> Bool {
            setUp()
            defer { tearDown() }
            driver.perform(driver.planner.addConfigured(address, sessions: driver.sessions()))
            let key = opened[0].0
            driver.attemptFailed(key, "refused", refusedByTrust: refusedByTrust)
            loop.advanceTime(by: .seconds(30))
            XCTAssertEqual(opened.count, 2)
            driver.attemptFailed(key, "connection refused")
            loop.advanceTime(by: wait)
            return opened.count == 3
        }
        XCTAssertTrue(secondRetryWithin(.milliseconds(1_500), refusedByTrust: false))
        XCTAssertFalse(secondRetryWithin(.milliseconds(1_500), refusedByTrust: true))
    }
}
