import ParleyCore
import XCTest

final class SessionTransportTests: XCTestCase {
    /// Transport keys for both sides of a fresh XX handshake.
    func keys() throws -> (initiator: TransportKeys, responder: TransportKeys) { try transportKeys() }

    func pair() throws -> (SessionTransport, SessionTransport) {
        let (ik, rk) = try keys()
        return (SessionTransport(keys: ik), SessionTransport(keys: rk))
    }

    func testBothDirectionsWork() throws {
        var (a, b) = try pair()
        for n in 0..<10 {
            let m = [UInt8](repeating: UInt8(n), count: n * 100)
            XCTAssertEqual(try b.open(try a.seal(m)), m)
            XCTAssertEqual(try a.open(try b.seal(m + [1])), m + [1])
        }
        XCTAssertEqual(a.messagesSent, 10)
        XCTAssertEqual(a.messagesReceived, 10)
        XCTAssertEqual(b.messagesSent, 10)
        XCTAssertEqual(b.messagesReceived, 10)
    }

    /// `start` (a fresh sending CipherState) rekeyed `rekeys` times and set to nonce `n`.
    func cipher(_ start: CipherState, rekeys: Int, nonce n: UInt64) -> CipherState {
        var c = start
        for _ in 0..<rekeys { c.rekey() }
        c.setNonce(n)
        return c
    }

    func testRekeyScheduleStaysInSyncAndRekeysExactlyAtEachInterval() throws {
        // The real schedule (no test-only override): message n (counting from 0) in each
        // direction is encrypted under the key rekeyed n / 65,536 times, with nonce n.
        XCTAssertEqual(WireLimits.rekeyEveryMessages, 65_536)
        let interval = WireLimits.rekeyEveryMessages
        let (ik, rk) = try keys()
        var a = SessionTransport(keys: ik)
        var b = SessionTransport(keys: rk)
        let checkpoints: Set<UInt64> = [0, interval - 1, interval, interval + 1, 2 * interval - 1, 2 * interval]
        let total = 2 * interval + 2
        for n in 0..<total {
            let m: [UInt8] = [UInt8(truncatingIfNeeded: n), UInt8(truncatingIfNeeded: n >> 8)]
            let fromA = try a.seal(m)
            let fromB = try b.seal(m)
            XCTAssertEqual(try b.open(fromA), m)
            XCTAssertEqual(try a.open(fromB), m)
            guard checkpoints.contains(n) else { continue }
            let expected = Int(n / interval)
            for (start, sealed) in [(ik.send, fromA), (rk.send, fromB)] {
                var right = cipher(start, rekeys: expected, nonce: n)
                XCTAssertEqual(try right.decrypt(ad: [], ciphertext: sealed), m, "message \(n): \(expected) rekeys")
                for wrong in [expected - 1, expected + 1] where wrong >= 0 {
                    var c = cipher(start, rekeys: wrong, nonce: n)
                    XCTAssertThrowsError(
                        try c.decrypt(ad: [], ciphertext: sealed), "message \(n) under \(wrong) rekeys")
                }
            }
        }
        XCTAssertEqual(a.messagesSent, total)
        XCTAssertEqual(a.messagesReceived, total)
        XCTAssertEqual(b.messagesSent, total)
        XCTAssertEqual(b.messagesReceived, total)
    }

    func testReplayedMessageFails() throws {
        var (a, b) = try pair()
        let m1 = try a.seal([1])
        XCTAssertEqual(try b.open(m1), [1])
        XCTAssertThrowsError(try b.open(m1)) { XCTAssertEqual($0 as? NoiseError, .decryptionFailed) }
    }

    func testReorderedMessageFails() throws {
        var (a, b) = try pair()
        _ = try a.seal([1])
        let m2 = try a.seal([2])
        XCTAssertThrowsError(try b.open(m2)) { XCTAssertEqual($0 as? NoiseError, .decryptionFailed) }
        XCTAssertEqual(b.messagesReceived, 0)
    }

    func testTamperedMessageFails() throws {
        var (a, b) = try pair()
        let m = try a.seal(Array("attack at dawn".utf8))
        for i in m.indices {
            var t = m
            t[i] ^= 0x01
            XCTAssertThrowsError(try b.open(t), "byte \(i)") { XCTAssertEqual($0 as? NoiseError, .decryptionFailed) }
        }
        XCTAssertThrowsError(try b.open(Array(m.dropLast())))
        XCTAssertThrowsError(try b.open(m + [0]))
        XCTAssertThrowsError(try b.open([]))
        // The forgeries did not advance the counter: the genuine message still opens.
        XCTAssertEqual(try b.open(m), Array("attack at dawn".utf8))
    }

    func testOwnMessageDoesNotOpenAsIncoming() throws {
        var (a, _) = try pair()
        let m = try a.seal([1, 2, 3])
        XCTAssertThrowsError(try a.open(m))
    }

    func testOversizeChunkIsRefusedWithoutConsumingANonce() throws {
        var (a, b) = try pair()
        XCTAssertThrowsError(try a.seal([UInt8](repeating: 0, count: WireLimits.maxPlaintextPerMessage + 1))) {
            XCTAssertEqual($0 as? NoiseError, .messageTooLong(NoiseConstants.maxMessageLength + 1))
        }
        XCTAssertEqual(a.messagesSent, 0)
        let full = [UInt8](repeating: 3, count: WireLimits.maxPlaintextPerMessage)
        let sealed = try a.seal(full)
        XCTAssertEqual(sealed.count, NoiseConstants.maxMessageLength)
        XCTAssertEqual(try b.open(sealed), full)
    }
}
