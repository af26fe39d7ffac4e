import XCTest

@testable import ParleyCore

final class SecretBytesTests: XCTestCase {
    /// More small secrets alive at once than one locked region holds: each keeps its own
    /// bytes, and a slot handed out again starts zeroed.
    func testSmallSecretsShareLockedRegionsWithoutMixingUp() {
        let n = LockedSlots.slotsPerRegion * 2 + 7
        var secrets: [SecretBytes] = []
        for i in 0..<n {
            secrets.append(
                SecretBytes(count: 32) { dst in
                    for k in 0..<32 { dst[k] = UInt8(truncatingIfNeeded: i &* 31 &+ k) }
                })
        }
        for (i, s) in secrets.enumerated() {
            XCTAssertEqual(s.copyBytes(), (0..<32).map { UInt8(truncatingIfNeeded: i &* 31 &+ $0) })
        }
        secrets.removeAll()
        for _ in 0..<n {
            let fresh = SecretBytes(count: LockedSlots.slotSize) { _ in }
            XCTAssertEqual(fresh.copyBytes(), [UInt8](repeating: 0, count: LockedSlots.slotSize))
        }
    }

    func testLargeAndEmptySecretsWork() {
        var big = [UInt8](repeating: 0xAB, count: 1_000)
        let secret = SecretBytes(consuming: &big)
        XCTAssertEqual(secret.count, 1_000)
        XCTAssertEqual(secret.copyBytes(), [UInt8](repeating: 0xAB, count: 1_000))
        XCTAssertEqual(big, [UInt8](repeating: 0, count: 1_000), "the caller's copy is wiped")
        XCTAssertEqual(SecretBytes(count: 0) { _ in }.count, 0)
        XCTAssertTrue(SecretBytes(count: 0) { _ in }.constantTimeEquals(SecretBytes(count: 0) { _ in }))
    }
}
