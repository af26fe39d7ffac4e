import ParleyCore
import XCTest

@testable import ParleyNodeCore

/// Who a room file still goes to, and why an offer is refused before the policy.
final class RoomFileAccessTests: XCTestCase {
    func testAnUnansweredRoomOfferGoesOnlyToAMemberAndAnUnknownDecidesNothing() {
        XCTAssertEqual(RoomFileAccess.outgoing(isRoomFile: true, answered: false, isMember: true), .serve)
        XCTAssertEqual(
            RoomFileAccess.outgoing(isRoomFile: true, answered: false, isMember: false),
            .cancel(reason: RoomFileAccess.notMemberReason))
        XCTAssertEqual(
            RoomFileAccess.outgoing(isRoomFile: true, answered: false, isMember: nil), .hold,
            "a failed read is not 'removed'")
        XCTAssertEqual(RoomFileAccess.outgoing(isRoomFile: false, answered: false, isMember: nil), .serve)
        XCTAssertFalse(RoomFileAccess.asksMembership(isRoomFile: false, answered: false), "a file for one peer")
    }

    /// A removed member keeps a transfer it accepted while a member (docs/PROTOCOL.md).
    func testATransferAcceptedBeforeTheRemovalGoesOn() {
        XCTAssertFalse(RoomFileAccess.asksMembership(isRoomFile: true, answered: true))
        XCTAssertEqual(RoomFileAccess.outgoing(isRoomFile: true, answered: true, isMember: false), .serve)
    }

    private func offer(size: UInt64 = 10, chunkSize: UInt32 = 4096, listHash: [UInt8]? = nil) -> FileOffer {
        let hash = FileHash.of([1, 2, 3])
        return FileOffer(
            transfer: .random(), size: size, chunkSize: chunkSize, contentHash: hash, listHash: listHash ?? hash,
            room: nil, name: "x", mediaType: "text/plain", caption: "", thumbnail: [])
    }

    /// Keys are free to mint and each waiting offer keeps a thumbnail and a caption until
    /// a person answers: past `maxWaitingOffersForStrangers` waiting in all, a stranger's
    /// offer is refused whatever its own count; a correspondent's still waits.
    func testAStrangersOfferIsRefusedWhenTooManyWaitInAll() {
        let full = FileOfferRefusal.maxWaitingOffersForStrangers
        XCTAssertEqual(
            FileOfferRefusal.reason(for: offer(), senderInRoom: nil, waitingOffers: 0, waitingInAll: full, sender: .stranger),
            FileOfferRefusal.tooManyWaitingInAll)
        XCTAssertNil(
            FileOfferRefusal.reason(
                for: offer(), senderInRoom: nil, waitingOffers: 0, waitingInAll: full - 1, sender: .stranger))
        XCTAssertNil(
            FileOfferRefusal.reason(
                for: offer(), senderInRoom: nil, waitingOffers: 0, waitingInAll: 10 * full, sender: .correspondent))
        XCTAssertEqual(
            FileOfferRefusal.reason(
                for: offer(), senderInRoom: nil, waitingOffers: FileOfferRefusal.maxWaitingOffersPerPeer,
                waitingInAll: 10 * full, sender: .correspondent),
            FileOfferRefusal.tooManyWaiting, "a correspondent keeps its own share")
    }

    func testAnOfferIsRefusedForItsLimitsItsHashesItsRoomAndAFlood() {
        XCTAssertNil(FileOfferRefusal.reason(for: offer(), senderInRoom: nil, waitingOffers: 0, waitingInAll: 0, sender: .stranger))
        XCTAssertNil(FileOfferRefusal.reason(for: offer(), senderInRoom: true, waitingOffers: 0, waitingInAll: 0, sender: .stranger))
        XCTAssertNotNil(FileOfferRefusal.reason(for: offer(chunkSize: 1000), senderInRoom: nil, waitingOffers: 0, waitingInAll: 0, sender: .stranger))
        XCTAssertNotNil(
            FileOfferRefusal.reason(for: offer(listHash: FileHash.of([9])), senderInRoom: nil, waitingOffers: 0, waitingInAll: 0, sender: .stranger))
        XCTAssertEqual(
            FileOfferRefusal.reason(for: offer(), senderInRoom: false, waitingOffers: 0, waitingInAll: 0, sender: .stranger), FileOfferRefusal.notRoomMember
        )
        XCTAssertEqual(
            FileOfferRefusal.reason(
                for: offer(), senderInRoom: nil, waitingOffers: FileOfferRefusal.maxWaitingOffersPerPeer, waitingInAll: 0, sender: .stranger),
            FileOfferRefusal.tooManyWaiting)
        XCTAssertNil(
            FileOfferRefusal.reason(
                for: offer(), senderInRoom: nil, waitingOffers: FileOfferRefusal.maxWaitingOffersPerPeer - 1, waitingInAll: 0, sender: .stranger))
    }
}
