import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon

/// Issue 29 (L1): the quota-refusal log's advice is safe to follow. Verifying or writing to
/// a stranger makes it a correspondent (a 4 GiB allowance, its files taken in): never
/// advised because a key sent a lot.
final class QuotaAdviceTests: XCTestCase {
    func testAStrangerRefusedForSendingTooMuchIsNeverToBeTrusted() {
        for reason in RefusalReason.allCases {
            let advice = Node.remedy(for: reason, standing: .stranger, peer: "hoarder-1")
            XCTAssertFalse(advice.contains("trust verify"), "\(reason): \(advice)")
            XCTAssertFalse(advice.contains("write to"), "\(reason): \(advice)")
        }
        let share = Node.remedy(for: .strangersShare, standing: .stranger, peer: "hoarder-1")
        XCTAssertTrue(share.contains("parley trust block hoarder-1") && share.contains("nothing is lost"), share)
        XCTAssertTrue(
            Node.remedy(for: .peerQuota, standing: .stranger, peer: "hoarder-1").contains("parley trust block"))
    }
}
