import Foundation
import Logging
import ParleyConfiguration
import XCTest

@testable import ParleyDaemon

/// Collects lines written through a LogOutput.
private final class LineCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []
    var lines: [String] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
    func append(_ line: String) {
        lock.lock()
        storage.append(line)
        lock.unlock()
    }
}

final class LogTests: XCTestCase {
    /// 2026-11-22T18:00:00.123Z
    private let fixedDate = Date(timeIntervalSince1970: 1_795_370_400.123)

    /// A swift-log Logger on our handler, writing to a collector; the shared level box too.
    private func logger(_ level: Logging.Logger.Level, _ format: LogFormat)
        -> (Logging.Logger, LineCollector, SharedLogLevel)
    {
        let collector = LineCollector()
        let date = fixedDate
        let shared = SharedLogLevel(level)
        let output = LogOutput(sink: { collector.append($0) })
        let log = Logging.Logger(label: "test") { _ in
            ParleyLogHandler(format: format, level: shared, output: output, clock: { date })
        }
        return (log, collector, shared)
    }

    func testJournaldPrefixes() {
        let (log, lines, _) = logger(.trace, .journald)
        log.critical("c")
        log.error("e")
        log.warning("w")
        log.notice("n")
        log.info("i")
        log.debug("d")
        log.trace("t")
        XCTAssertEqual(lines.lines, ["<2>c", "<3>e", "<4>w", "<5>n", "<6>i", "<7>d", "<7>t"])
    }

    func testHumanFormat() {
        let (log, lines, _) = logger(.debug, .human)
        log.info("message", ["key": "value"])
        log.warning("careful")
        XCTAssertEqual(
            lines.lines,
            [
                "2026-11-22T18:00:00.123Z info  message key=value",
                "2026-11-22T18:00:00.123Z warning careful"
            ])
    }

    func testISO8601() {
        XCTAssertEqual(LogLine.iso8601(Date(timeIntervalSince1970: 0)), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(LogLine.iso8601(Date(timeIntervalSince1970: -0.5)), "1969-12-31T23:59:59.500Z")
        XCTAssertEqual(LogLine.iso8601(fixedDate), "2026-11-22T18:00:00.123Z")
    }

    func testLevelFiltering() {
        let (log, lines, _) = logger(.warning, .journald)
        log.info("dropped")
        log.debug("dropped", ["k": "v"])
        log.error("kept")
        XCTAssertEqual(lines.lines, ["<3>kept"])
    }

    func testSharedLevelReachesEveryCopy() {
        let (log, lines, shared) = logger(.warning, .journald)
        let copy = log
        shared.level = .debug  // what a SIGHUP reload does
        XCTAssertEqual(log.logLevel, .debug)
        XCTAssertEqual(copy.logLevel, .debug)
        log.debug("now kept")
        copy.debug("from the copy")
        XCTAssertEqual(lines.lines, ["<7>now kept", "<7>from the copy"])
    }

    /// swift-log's rule: a level or metadata set on one copy stays on that copy.
    func testLevelAndMetadataSetOnACopyStayOnIt() {
        let (log, lines, shared) = logger(.info, .journald)
        var quiet = log
        quiet.logLevel = .error
        quiet[metadataKey: "component"] = "quiet"
        XCTAssertEqual(log.logLevel, .info)
        XCTAssertNil(log[metadataKey: "component"])
        shared.level = .debug
        XCTAssertEqual(quiet.logLevel, .error, "a copy's own level is not overridden by the shared one")
        quiet.warning("dropped")
        quiet.error("kept")
        log.debug("plain")
        XCTAssertEqual(lines.lines, ["<3>kept component=quiet", "<7>plain"])
    }

    func testMetadataIsSortedAndQuotedWhenNeeded() {
        let (log, lines, _) = logger(.info, .journald)
        log.info(
            "peer connected", ["peer": "3a9c", "name": "Bob Smith", "addr": "[::1]:7744", "empty": "", "eq": "a=b"])
        XCTAssertEqual(
            lines.lines, [#"<6>peer connected addr=[::1]:7744 empty="" eq="a=b" name="Bob Smith" peer=3a9c"#])
    }

    func testSwiftLogMetadataIsMergedCallSiteFirst() {
        var (log, lines, _) = logger(.info, .journald)
        log[metadataKey: "component"] = "node"
        log[metadataKey: "peer"] = "from-logger"
        log.info("event", metadata: ["peer": "from-call", "count": .stringConvertible(3)])
        XCTAssertEqual(lines.lines, ["<6>event component=node count=3 peer=from-call"])
    }

    func testNewlinesAndControlsAreEscapedOneLinePerEvent() {
        let (log, lines, _) = logger(.info, .journald)
        log.info("line one\nline two\r\u{1b}[31m", ["name": "evil\n<3>forged", "q": "say \"hi\"\\", "bad key=": "v"])
        XCTAssertEqual(lines.lines.count, 1)
        let line = lines.lines[0]
        XCTAssertFalse(line.contains("\n"))
        XCTAssertFalse(line.contains("\r"))
        XCTAssertFalse(line.contains("\u{1b}"))
        XCTAssertEqual(
            line,
            #"<6>line one\nline two\r\u{1b}[31m bad_key_=v name="evil\n<3>forged" q="say \"hi\"\\""#)
    }

    func testOneArgumentMessagesAreEscapedToo() {
        let (log, lines, _) = logger(.info, .journald)
        let peerName = "mallory\n<3>forged"
        log.error("reload failed: \(peerName)")
        XCTAssertEqual(lines.lines, [#"<3>reload failed: mallory\n<3>forged"#])
    }

    func testUnicodeLineSeparatorsAreEscaped() {
        let (log, lines, _) = logger(.info, .journald)
        log.info("a\u{2028}b", ["k": "c\u{85}d"])
        XCTAssertEqual(lines.lines, [#"<6>a\u{2028}b k="c\u{85}d""#])
    }

    func testLongValuesAndMessagesAreCut() {
        let (log, lines, _) = logger(.info, .journald)
        log.info("m", ["k": String(repeating: "x", count: LogLine.maxValueLength + 100)])
        log.info(String(repeating: "y", count: LogLine.maxMessageLength + 1), [:])
        log.info("m", [String(repeating: "k", count: LogLine.maxKeyLength + 1): "v"])
        XCTAssertEqual(
            lines.lines,
            [
                "<6>m k=" + String(repeating: "x", count: LogLine.maxValueLength) + "…",
                "<6>" + String(repeating: "y", count: LogLine.maxMessageLength) + "…",
                "<6>m " + String(repeating: "k", count: LogLine.maxKeyLength) + "=v"
            ])
    }

    func testFormatChoiceFollowsJournalStream() {
        XCTAssertEqual(LogFormat.forStandardError(journalStream: nil, standardError: (1, 2)), .human)
        XCTAssertEqual(LogFormat.forStandardError(journalStream: "", standardError: (1, 2)), .human)
        XCTAssertEqual(LogFormat.forStandardError(journalStream: "1:2", standardError: (1, 2)), .journald)
        XCTAssertEqual(
            LogFormat.forStandardError(journalStream: "1:3", standardError: (1, 2)), .human,
            "inherited, stderr elsewhere")
        XCTAssertEqual(LogFormat.forStandardError(journalStream: "garbage", standardError: (1, 2)), .human)
        XCTAssertEqual(LogFormat.forStandardError(journalStream: "1:2", standardError: nil), .journald)

        if let identity = LogFormat.standardErrorIdentity() {
            let stream = "\(identity.device):\(identity.inode)"
            XCTAssertEqual(LogFormat.forStandardError(environment: ["JOURNAL_STREAM": stream]), .journald)
        }
        XCTAssertEqual(LogFormat.forStandardError(environment: [:]), .human)
    }

    func testConfigurationLevelsMapToSwiftLogLevels() {
        XCTAssertEqual(LogLevel.allCases.map(\.loggerLevel), [.error, .warning, .info, .debug])
    }

    func testConcurrentLoggingKeepsLinesWhole() {
        let (log, lines, _) = logger(.info, .journald)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for index in 0..<200 { log.info("w\(worker) i\(index)") }
        }
        XCTAssertEqual(lines.lines.count, 1600)
        XCTAssertTrue(lines.lines.allSatisfy { $0.hasPrefix("<6>w") })
    }

    // MARK: - Rate limiting

    func testRateLimiterSuppressesWithinIntervalAndCounts() {
        var limiter = RateLimiter(interval: .seconds(10), maxKeys: 8)
        let t0 = ContinuousClock.now
        XCTAssertEqual(limiter.record("10.0.0.1", message: "m", at: t0), .emit(suppressedBefore: 0))
        XCTAssertEqual(limiter.record("10.0.0.1", message: "m", at: t0 + .seconds(1)), .suppress)
        XCTAssertEqual(limiter.record("10.0.0.1", message: "m", at: t0 + .seconds(9)), .suppress)
        XCTAssertEqual(
            limiter.record("10.0.0.2", message: "m", at: t0 + .seconds(9)), .emit(suppressedBefore: 0),
            "other sources are independent")
        XCTAssertEqual(limiter.suppressedCount(for: "10.0.0.1"), 2)
        XCTAssertEqual(limiter.record("10.0.0.1", message: "m", at: t0 + .seconds(10)), .emit(suppressedBefore: 2))
        XCTAssertEqual(limiter.suppressedCount(for: "10.0.0.1"), 0)
        XCTAssertEqual(limiter.totalSuppressed, 2)
    }

    func testRateLimiterDrainReportsQuietKeysOnce() {
        var limiter = RateLimiter(interval: .seconds(10), maxKeys: 8)
        let t0 = ContinuousClock.now
        _ = limiter.record("a", message: "first", at: t0)
        _ = limiter.record("a", message: "second", at: t0 + .seconds(1))
        _ = limiter.record("a", message: "third", at: t0 + .seconds(2))
        _ = limiter.record("b", message: "only", at: t0)
        XCTAssertEqual(limiter.drainExpired(at: t0 + .seconds(5)), [], "nothing expired yet")
        XCTAssertEqual(
            limiter.drainExpired(at: t0 + .seconds(10)),
            [RateLimiter.Summary(key: "a", suppressed: 2, lastMessage: "third")])
        XCTAssertEqual(limiter.trackedKeys, 0)
        XCTAssertEqual(
            limiter.record("a", message: "m", at: t0 + .seconds(11)), .emit(suppressedBefore: 0),
            "the drained count is not reported twice")
    }

    func testRateLimiterBoundsKeysWithOverflowWindow() {
        var limiter = RateLimiter(interval: .seconds(10), maxKeys: 2)
        let t0 = ContinuousClock.now
        XCTAssertEqual(limiter.record("a", message: "m", at: t0), .emit(suppressedBefore: 0))
        XCTAssertEqual(limiter.record("b", message: "m", at: t0), .emit(suppressedBefore: 0))
        XCTAssertEqual(limiter.record("c", message: "m", at: t0), .emit(suppressedBefore: 0))
        for source in 0..<1000 {
            XCTAssertEqual(limiter.record("spoofed-\(source)", message: "m", at: t0), .suppress)
        }
        XCTAssertEqual(limiter.trackedKeys, 3, "two keys plus the shared overflow window")
        XCTAssertEqual(limiter.suppressedCount(for: RateLimiter.overflowKey), 1000)
    }

    func testRateLimitedLogOncePerSourceWithSuppressedCount() {
        let (log, lines, _) = logger(.debug, .journald)
        let clock = ManualClock()
        let limited = RateLimitedLog(logger: log, level: .warning, interval: .seconds(60), now: { clock.now })
        XCTAssertTrue(limited.log(key: "192.168.1.66", "handshake failed", ["source": "192.168.1.66"]))
        for _ in 0..<499 {
            XCTAssertFalse(limited.log(key: "192.168.1.66", "handshake failed", ["source": "192.168.1.66"]))
        }
        XCTAssertTrue(limited.log(key: "192.168.1.67", "handshake failed", ["source": "192.168.1.67"]))
        XCTAssertEqual(limited.suppressedCount(for: "192.168.1.66"), 499)
        XCTAssertEqual(limited.totalSuppressed, 499)

        clock.advance(by: .seconds(61))
        XCTAssertTrue(limited.log(key: "192.168.1.66", "handshake failed", ["source": "192.168.1.66"]))
        XCTAssertEqual(
            lines.lines,
            [
                "<4>handshake failed source=192.168.1.66",
                "<4>handshake failed source=192.168.1.67",
                "<4>handshake failed source=192.168.1.66 suppressed=499"
            ])
    }

    func testRateLimitedLogFlushReportsQuietSources() {
        let (log, lines, _) = logger(.debug, .journald)
        let clock = ManualClock()
        let limited = RateLimitedLog(logger: log, level: .warning, interval: .seconds(60), now: { clock.now })
        limited.log(key: "10.0.0.9", "bad frame")
        limited.log(key: "10.0.0.9", "bad frame")
        limited.log(key: "10.0.0.9", "bad frame")
        limited.flush()
        XCTAssertEqual(lines.lines.count, 1, "not expired yet")
        clock.advance(by: .seconds(60))
        limited.flush()
        limited.flush()
        XCTAssertEqual(lines.lines, ["<4>bad frame", "<4>bad frame key=10.0.0.9 suppressed=2"])
    }
}

/// A clock the test moves by hand.
private final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = ContinuousClock.now
    var now: ContinuousClock.Instant {
        lock.lock()
        defer { lock.unlock() }
        return current
    }
    func advance(by duration: Duration) {
        lock.lock()
        current += duration
        lock.unlock()
    }
}
