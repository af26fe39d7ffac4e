import XCTest

@testable import ParleyDaemon

/// When parleyd asks systemd for more start-up time (`StartTimeoutExtension`), on a mock
/// clock: while the work progresses, never once it stalls or start-up runs too long.
final class StartTimeoutExtensionTests: XCTestCase {
    private let upgrade = "upgrading the message store (lean-messages-v1, 1 of 1)"
    private func work(_ progress: UInt64, _ description: String? = nil) -> StartTimeoutExtension.Work {
        .init(description: description ?? upgrade, progress: progress)
    }

    private func isExtension(_ action: StartTimeoutExtension.Action) -> Bool {
        if case .extend = action { return true }
        return false
    }

    func testTheStandardLimitsKeepAHangToSystemdsDefaultTimeout() {
        let l = StartTimeoutExtension.Limits.standard
        XCTAssertEqual(l.tick, .seconds(5))
        XCTAssertEqual(l.idleTick, .milliseconds(250), "an upgrade's first extension follows its start within this")
        XCTAssertEqual(l.grant, .seconds(30))
        XCTAssertGreaterThanOrEqual(l.grant, l.tick * 3, "several looks before an extension lapses")
        XCTAssertEqual(l.stallGrace + l.grant, .seconds(90), "a hang is stopped 90 s after its last progress")
        XCTAssertEqual(StartTimeoutExtension.microseconds(l.grant), 30_000_000)
    }

    func testNothingIsSaidWhenNoLongWorkRunsAndItIsLookedForOften() {
        var d = StartTimeoutExtension(startedAt: .seconds(100))
        for t in stride(from: 100, through: 1000, by: 5) {
            XCTAssertEqual(d.look(now: .seconds(t), work: nil), .none)
        }
        XCTAssertEqual(d.nextLook(after: nil), .milliseconds(250))
        XCTAssertEqual(d.nextLook(after: work(1)), .seconds(5))
    }

    func testProgressingWorkIsExtendedAtEveryLookWithItsStatus() {
        var d = StartTimeoutExtension(startedAt: .seconds(10))
        XCTAssertEqual(
            d.look(now: .seconds(10), work: work(0)),
            .extend(
                microseconds: 30_000_000,
                status: "upgrading the message store (lean-messages-v1, 1 of 1), 0 s so far; it is safe to wait"))
        // Ten minutes of steady progress: every look extends.
        for (i, t) in stride(from: 15, through: 610, by: 5).enumerated() {
            let action = d.look(now: .seconds(t), work: work(UInt64(i + 1) * 1000))
            XCTAssertEqual(
                action,
                .extend(microseconds: 30_000_000, status: "\(upgrade), \(t - 10) s so far; it is safe to wait"))
        }
    }

    func testAStalledUpgradeIsNoLongerExtendedAndSaysSoOnce() {
        var d = StartTimeoutExtension(startedAt: .zero)
        XCTAssertTrue(isExtension(d.look(now: .seconds(0), work: work(1))))
        XCTAssertTrue(isExtension(d.look(now: .seconds(5), work: work(2))))
        // The count stands still from t = 5: still extended through the grace (a long fsync)...
        for t in stride(from: 10, through: 65, by: 5) {
            XCTAssertTrue(isExtension(d.look(now: .seconds(t), work: work(2))), "t=\(t)")
        }
        // ...then not: said once, then silence while it stays stalled.
        XCTAssertEqual(
            d.look(now: .seconds(70), work: work(2)),
            .status("\(upgrade): no progress for 65 s; systemd's start timeout applies again"))
        for t in stride(from: 75, through: 400, by: 5) {
            XCTAssertEqual(d.look(now: .seconds(t), work: work(2)), .none, "t=\(t)")
        }
        // Work that moves again (if systemd has not stopped it yet) is extended again.
        XCTAssertTrue(isExtension(d.look(now: .seconds(405), work: work(3))))
        XCTAssertEqual(
            d.look(now: .seconds(470), work: work(3)),
            .status("\(upgrade): no progress for 65 s; systemd's start timeout applies again"))
    }

    func testTheNextMigrationCountsAsProgress() {
        var d = StartTimeoutExtension(startedAt: .zero)
        XCTAssertTrue(isExtension(d.look(now: .seconds(0), work: work(7, "a (1 of 2)"))))
        XCTAssertTrue(isExtension(d.look(now: .seconds(59), work: work(7, "a (1 of 2)"))))
        XCTAssertTrue(isExtension(d.look(now: .seconds(100), work: work(7, "b (2 of 2)"))))
        XCTAssertTrue(isExtension(d.look(now: .seconds(160), work: work(7, "b (2 of 2)"))))
        XCTAssertFalse(isExtension(d.look(now: .seconds(161), work: work(7, "b (2 of 2)"))))
    }

    func testAStartUpLongerThanTheCeilingIsNotExtendedEvenIfItsCountMoves() {
        var d = StartTimeoutExtension(startedAt: .seconds(1))
        let ceiling = StartTimeoutExtension.Limits.standard.maxStartup
        var t = Duration.seconds(1)
        var progress: UInt64 = 0
        while t <= ceiling + .seconds(1) {
            progress += 1
            XCTAssertTrue(isExtension(d.look(now: t, work: work(progress))), "\(t)")
            t += .seconds(5)
        }
        progress += 1
        XCTAssertEqual(
            d.look(now: t, work: work(progress)),
            .status(
                "\(upgrade): still running after 21605 s, longer than any upgrade should take; "
                    + "no more start-up time asked for"))
        for _ in 0..<100 {
            t += .seconds(5)
            progress += 1
            XCTAssertEqual(d.look(now: t, work: work(progress)), .none)
        }
    }
}
