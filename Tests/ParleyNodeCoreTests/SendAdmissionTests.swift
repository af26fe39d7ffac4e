import ParleyCore
import XCTest

@testable import ParleyNodeCore

/// `SendAdmission`: which local sends may be queued, item by item, the bound counting
/// what the outbox holds and what the same batch admitted before.
final class SendAdmissionTests: XCTestCase {
    enum Refusal: Equatable { case blocked }
    typealias Admission = SendAdmission<Refusal>

    let alice = identity(1)
    let bob = identity(2)

    private func item(_ peer: IdentityPublicKey, _ bytes: Int, _ refusal: Refusal? = nil) -> Admission.Item {
        Admission.Item(peer: peer, bodyBytes: bytes, refusal: refusal)
    }

    private func ledger(_ counts: [IdentityPublicKey: Int]) -> OutboxLedger {
        var l = OutboxLedger()
        l.loadCounts(counts)
        return l
    }

    func testAnEmptyBatchAdmitsNothing() {
        let d = Admission().judge([], ledger: OutboxLedger())
        XCTAssertEqual(d.verdicts, [])
        XCTAssertEqual(d.admittedPerPeer, [:])
    }

    func testBodySizeExactlyAtTheLimitIsAdmittedAndOneByteOverIsNot() {
        let d = Admission(maxBodyBytes: 10).judge(
            [item(alice, 10), item(alice, 11), item(alice, 0), item(alice, 1)], ledger: OutboxLedger())
        XCTAssertEqual(d.verdicts, [.admitted, .bodyTooLarge(11), .emptyBody, .admitted])
        XCTAssertEqual(d.admittedPerPeer, [alice: 2])
        XCTAssertEqual(
            Admission().judge([item(alice, WireLimits.maxBodyBytes + 1)], ledger: OutboxLedger()).verdicts,
            [.bodyTooLarge(WireLimits.maxBodyBytes + 1)], "the default bound is the wire's")
    }

    /// The checks' order: an empty body is reported before a refused recipient, and a
    /// refused recipient before a full queue.
    func testTheFirstReasonThatAppliesIsTheAnswer() {
        let full = ledger([alice: 5])
        let a = Admission(maxBodyBytes: 10, maxQueuedPerPeer: 5)
        XCTAssertEqual(
            a.judge(
                [item(alice, 0, .blocked), item(alice, 11, .blocked), item(alice, 3, .blocked), item(alice, 3)],
                ledger: full
            ).verdicts,
            [.emptyBody, .bodyTooLarge(11), .refused(.blocked), .queueFull(limit: 5)])
    }

    func testAQueueOneBelowTheBoundTakesExactlyOneMore() {
        let a = Admission(maxQueuedPerPeer: 3)
        XCTAssertEqual(a.judge([item(alice, 1)], ledger: ledger([alice: 2])).verdicts, [.admitted])
        XCTAssertEqual(a.judge([item(alice, 1)], ledger: ledger([alice: 3])).verdicts, [.queueFull(limit: 3)])
    }

    /// Several items for one recipient cross the bound in the middle of the batch: those
    /// before it are admitted, the rest refused; another recipient is not affected, and
    /// refused items do not use up the bound.
    func testABatchCrossingTheQueueBoundIsCutWhereItCrosses() {
        let a = Admission(maxBodyBytes: 10, maxQueuedPerPeer: 4)
        let d = a.judge(
            [
                item(alice, 1), item(bob, 1), item(alice, 0), item(alice, 1, .blocked), item(alice, 1),
                item(alice, 1), item(bob, 1)
            ], ledger: ledger([alice: 2]))
        XCTAssertEqual(
            d.verdicts,
            [.admitted, .admitted, .emptyBody, .refused(.blocked), .admitted, .queueFull(limit: 4), .admitted])
        XCTAssertEqual(d.admittedPerPeer, [alice: 2, bob: 2])
    }

    /// The ledger's counts not loaded (a store that could not count): nothing is queued
    /// as far as the bound knows, which is the node's behaviour before this type existed.
    func testAnUnloadedLedgerCountsOnlyTheBatch() {
        let d = Admission(maxQueuedPerPeer: 2).judge(
            [item(alice, 1), item(alice, 1), item(alice, 1)], ledger: OutboxLedger())
        XCTAssertEqual(d.verdicts, [.admitted, .admitted, .queueFull(limit: 2)])
    }
}
