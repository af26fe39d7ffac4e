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

    /// Deleting a conversation (`parley forget-messages`) cannot be undone: advice that
    /// names it first saves the conversation to a file (`parley export` alone writes to
    /// the terminal, and without a peer exports everything), for the same peer.
    func testAdviceToDeleteAConversationSavesItFirst() {
        var named = 0
        for reason in RefusalReason.allCases {
            for standing in [ReceiveQuota.Standing.stranger, .correspondent] {
                let advice = Node.remedy(for: reason, standing: standing, peer: "0a1b2c3d")
                guard let forget = advice.range(of: "parley forget-messages ") else { continue }
                named += 1
                let peer = advice[forget.upperBound...].prefix { $0 != ":" && $0 != ")" }
                guard let save = advice.range(of: "parley export \(peer) > ") else {
                    XCTFail("\(reason) \(standing): deletes without saving first: \(advice)")
                    continue
                }
                XCTAssertLessThan(save.lowerBound, forget.lowerBound, advice)
                XCTAssertTrue(advice.contains("for good"), "says the deletion is final: \(advice)")
            }
        }
        XCTAssertGreaterThan(named, 0, "some advice makes room by deleting")
    }
}
