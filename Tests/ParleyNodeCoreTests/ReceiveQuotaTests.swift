import ParleyCore
import ParleyNodeCore
import XCTest

final class ReceiveQuotaTests: XCTestCase {
    private let quota = ReceiveQuota(
        stranger: .init(messages: 3, bytes: 1_000),
        correspondent: .init(messages: 10, bytes: 10_000),
        total: .init(messages: 12, bytes: 20_000),
        diskFloorBytes: 5_000)

    private func decide(
        _ sizes: [Int], peer: ReceiveQuota.Usage = .init(), total: ReceiveQuota.Usage = .init(),
        verified: Bool = false, free: Int? = 1_000_000
    ) -> [RefusalReason?] {
        quota.decide(
            bodySizes: sizes, peer: peer, total: total, sender: verified ? .correspondent : .stranger,
            freeDiskBytes: free)
    }

    func testAnUnverifiedPeerIsRefusedPastItsMessageCount() {
        XCTAssertEqual(decide([10, 10, 10, 10, 10]), [nil, nil, nil, .peerQuota, .peerQuota])
        XCTAssertEqual(
            decide([10, 10], peer: .init(messages: 2, bytes: 20)), [nil, .peerQuota],
            "what is already stored counts")
    }

    func testAnUnverifiedPeerIsRefusedPastItsBytes() {
        XCTAssertEqual(decide([600, 600]), [nil, .peerQuota])
    }

    func testARefusedLargeMessageDoesNotCountSoASmallerOneStillFits() {
        XCTAssertEqual(decide([600, 600, 300]), [nil, .peerQuota, nil])
    }

    func testAVerifiedPeerHasTheLargerAllowance() {
        let sizes = [Int](repeating: 500, count: 11)
        let verdicts = decide(sizes, verified: true)
        XCTAssertEqual(verdicts.filter { $0 == nil }.count, 10)
        XCTAssertEqual(verdicts.last, .peerQuota)
        XCTAssertEqual(decide(sizes).filter { $0 == nil }.count, 2, "the same peer unverified: 1,000 bytes")
    }

    func testManyPeersWithinTheirOwnAllowanceStillMeetTheTotal() {
        XCTAssertEqual(decide([10, 10], total: .init(messages: 11, bytes: 110)), [nil, .nodeQuota])
        XCTAssertEqual(decide([10], total: .init(messages: 1, bytes: 19_995), verified: true), [.nodeQuota])
    }

    func testTheDiskFloorRefusesBeforeAnyQuota() {
        XCTAssertEqual(decide([10], free: 5_005), [.diskFull])
        XCTAssertEqual(decide([10, 10], free: 5_015), [nil, .diskFull], "accepted bytes use the free space up")
        XCTAssertEqual(decide([10], peer: .init(messages: 3, bytes: 30), free: 100), [.diskFull])
    }

    func testAnUnmeasuredDiskDoesNotRefuse() {
        XCTAssertEqual(decide([10], free: nil), [nil])
    }

    func testTheStandardAllowancesAreOrdered() {
        let s = ReceiveQuota.standard
        XCTAssertLessThan(s.stranger.messages, s.correspondent.messages)
        XCTAssertLessThan(s.stranger.bytes, s.correspondent.bytes)
        XCTAssertLessThanOrEqual(s.correspondent.bytes, s.total.bytes)
    }

    func testAYearOfABusyConversationFitsACorrespondentButNotAStranger() {
        // 300 messages a day of ~200 bytes for a year: what a real conversation reaches,
        // far past the 10,000 messages a stranger may leave.
        let year = ReceiveQuota.Usage(messages: 300 * 365, bytes: 300 * 365 * 200)
        let s = ReceiveQuota.standard
        XCTAssertEqual(
            s.decide(bodySizes: [200], peer: year, total: year, sender: .correspondent, freeDiskBytes: 1 << 40), [nil])
        XCTAssertEqual(
            s.decide(bodySizes: [200], peer: year, total: year, sender: .stranger, freeDiskBytes: 1 << 40),
            [.peerQuota])
    }

    func testACorrespondentIsStillBoundedByTheTotalAndTheDiskFloor() {
        XCTAssertEqual(decide([10], total: .init(messages: 12, bytes: 120), verified: true), [.nodeQuota])
        XCTAssertEqual(decide([10], verified: true, free: 5_001), [.diskFull])
    }

    func testRefusalCodesAreTheProtocolsAndDistinct() {
        XCTAssertEqual(RefusalReason.allCases.map(\.rawValue), [1, 2, 3, 4, 255])
    }
}

/// Issue 29 (M2): strangers as a class have a bounded share of the storage, of the disk
/// above the floor, and a shared rate; contacts (correspondents) are never held back by them.
final class StrangersShareTests: XCTestCase {
    // Total 1,600 messages / 160,000 bytes: strangers together keep 100 / 10,000.
    private let quota = ReceiveQuota(
        stranger: .init(messages: 60, bytes: 6_000),
        correspondent: .init(messages: 1_000, bytes: 100_000),
        total: .init(messages: 1_600, bytes: 160_000),
        diskFloorBytes: 5_000)
    private let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)

    private func unlimited() -> StrangerIntake {
        StrangerIntake(now: t0, burstBytes: 1 << 40, bytesPerSecond: 1, burstMessages: 1 << 30, messagesPerSecond: 1)
    }

    func testTheShareIsAFractionOfTheTotal() {
        XCTAssertEqual(quota.strangers, .init(messages: 100, bytes: 10_000))
        XCTAssertEqual(ReceiveQuota.standard.strangers, .init(messages: 125_000, bytes: 1 << 30))
        XCTAssertEqual(ReceiveQuota.standard.strangersDiskFloorBytes, 512 << 20)
    }

    func testManyFreshStrangersTogetherStopAtTheShareButACorrespondentIsStillTaken() {
        var intake = unlimited()
        var strangers = ReceiveQuota.Usage()
        var total = ReceiveQuota.Usage()
        // Ten fresh keys, each within its own allowance (60 messages of 100 bytes).
        var accepted = 0
        for _ in 0..<10 {
            let verdicts = quota.decide(
                bodySizes: [Int](repeating: 100, count: 60), peer: .init(), total: total, strangers: strangers,
                sender: .stranger, freeDiskBytes: 1 << 40, intake: &intake, now: t0)
            let kept = verdicts.filter { $0 == nil }.count
            accepted += kept
            strangers = strangers + .init(messages: kept, bytes: kept * 100)
            total = total + .init(messages: kept, bytes: kept * 100)
            XCTAssertTrue(verdicts.allSatisfy { $0 == nil || $0 == .strangersShare })
        }
        XCTAssertEqual(accepted, 100, "strangers together keep their share, not 10 x 60")
        let contact = quota.decide(
            bodySizes: [Int](repeating: 100, count: 50), peer: .init(), total: total, strangers: strangers,
            sender: .correspondent, freeDiskBytes: 1 << 40, intake: &intake, now: t0)
        XCTAssertEqual(contact, [RefusalReason?](repeating: nil, count: 50), "a contact is not held back")
    }

    func testStrangersStopAboveTheDiskFloorContactsDoNot() {
        var intake = unlimited()
        let floor = quota.strangersDiskFloorBytes
        XCTAssertEqual(floor, 5_000 + ReceiveQuota.strangersDiskReserve)
        let free = floor + 150
        let stranger = quota.decide(
            bodySizes: [100, 100], peer: .init(), total: .init(), strangers: .init(), sender: .stranger,
            freeDiskBytes: free, intake: &intake, now: t0)
        XCTAssertEqual(stranger, [nil, .strangersShare])
        let contact = quota.decide(
            bodySizes: [100, 100], peer: .init(), total: .init(), strangers: .init(), sender: .correspondent,
            freeDiskBytes: free, intake: &intake, now: t0)
        XCTAssertEqual(contact, [nil, nil])
    }

    func testStrangersShareARateThatRefillsWithTimeAndContactsDoNotTakeFromIt() {
        let big = ReceiveQuota(
            stranger: .init(messages: 1_000_000, bytes: 1 << 40),
            correspondent: .init(messages: 1_000_000, bytes: 1 << 40),
            total: .init(messages: 1 << 40, bytes: 1 << 50), diskFloorBytes: 0)
        var intake = StrangerIntake(
            now: t0, burstBytes: 1_000, bytesPerSecond: 100, burstMessages: 5, messagesPerSecond: 1)
        func strangers(_ sizes: [Int], at t: MonotonicInstant) -> [RefusalReason?] {
            big.decide(
                bodySizes: sizes, peer: .init(), total: .init(), strangers: .init(), sender: .stranger,
                freeDiskBytes: nil, intake: &intake, now: t)
        }
        XCTAssertEqual(strangers([400, 400, 400], at: t0), [nil, nil, .strangersShare], "1,000 bytes at once")
        let contact = big.decide(
            bodySizes: [Int](repeating: 400, count: 10), peer: .init(), total: .init(), strangers: .init(),
            sender: .correspondent, freeDiskBytes: nil, intake: &intake, now: t0)
        XCTAssertEqual(contact.compactMap { $0 }, [], "contacts are not rate-limited by strangers")
        XCTAssertEqual(strangers([200], at: t0), [nil], "the contact took nothing from the strangers' rate")
        XCTAssertEqual(strangers([100], at: t0), [.strangersShare])
        XCTAssertEqual(strangers([100], at: t0 + .seconds(1)), [nil], "100 bytes a second")
        XCTAssertEqual(strangers([1], at: t0 + .seconds(1)), [.strangersShare], "nothing left until it refills")
        XCTAssertEqual(
            strangers([1, 1, 1, 1, 1, 1], at: t0 + .seconds(10)), [nil, nil, nil, nil, nil, .strangersShare],
            "at most 5 messages at once")
    }

    func testTheStandardRateIsNamedAndLetsOneStrangersWholeAllowanceThrough() {
        XCTAssertEqual(StrangerIntake.burstBytes, ReceiveQuota.standard.stranger.bytes)
        XCTAssertEqual(StrangerIntake.burstMessages, ReceiveQuota.standard.stranger.messages)
    }
}
