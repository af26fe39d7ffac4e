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
        XCTAssertEqual(RefusalReason.allCases.map(\.rawValue), [1, 2, 3, 255])
    }
}
