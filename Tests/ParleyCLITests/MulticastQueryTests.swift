import XCTest

@testable import parley

/// `parley doctor`'s legacy-unicast mDNS query: the bytes sent, and the judgement of
/// hostile datagrams that reach its port.
final class MulticastQueryTests: XCTestCase {
    let id: UInt16 = 0xBEEF

    /// An answer as avahi sends one: ID echoed, QR|AA, our question, one PTR answer.
    func answer(id: UInt16 = 0xBEEF, flags: UInt16 = 0x8400, qd: UInt16 = 1, an: UInt16 = 1) -> [UInt8] {
        var p: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF), UInt8(flags >> 8), UInt8(flags & 0xFF)]
        p += [UInt8(qd >> 8), UInt8(qd & 0xFF), UInt8(an >> 8), UInt8(an & 0xFF), 0, 0, 0, 0]
        p += MulticastQuery.question
        // PTR answer: name by pointer to the question (0xC00C), type 12, class 1, TTL 10, rdata.
        p += [0xC0, 0x0C, 0, 12, 0, 1, 0, 0, 0, 10, 0, 2, 0xC0, 0x0C]
        return p
    }

    func testTheQueryIsOneStandardQuestionForParleysServiceType() {
        let q = MulticastQuery.query(id: id)
        XCTAssertEqual(Array(q[0..<12]), [0xBE, 0xEF, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0])
        // "\u{7}_parley\u{4}_tcp\u{5}local\0", PTR, IN (no QU bit).
        XCTAssertEqual(Array(q[12...]), Array("\u{7}_parley\u{4}_tcp\u{5}local\u{0}".utf8) + [0, 12, 0, 1])
        XCTAssertEqual(MulticastQuery.judge(answer(), id: id), nil)
    }

    func testHostileOrUnrelatedDatagramsAreNotAnswers() {
        XCTAssertEqual(MulticastQuery.judge([], id: id), .tooShort)
        XCTAssertEqual(MulticastQuery.judge(Array(answer().prefix(11)), id: id), .tooShort)
        XCTAssertEqual(MulticastQuery.judge(answer(id: 0xBEEE), id: id), .wrongID)
        // Our own query looped back, or someone else's query: not a response.
        XCTAssertEqual(MulticastQuery.judge(MulticastQuery.query(id: id), id: id), .notAResponse)
        XCTAssertEqual(MulticastQuery.judge(answer(flags: 0x8403), id: id), .badOpcodeOrError)  // NXDOMAIN
        XCTAssertEqual(MulticastQuery.judge(answer(flags: 0xA400), id: id), .badOpcodeOrError)  // opcode 4
        XCTAssertEqual(MulticastQuery.judge(answer(qd: 0), id: id), .noQuestionEcho)
        XCTAssertEqual(MulticastQuery.judge(answer(an: 0), id: id), .noAnswers)
        // Truncated inside the question: bounded, no read past the end.
        for cut in 12..<(12 + MulticastQuery.question.count) {
            XCTAssertEqual(MulticastQuery.judge(Array(answer().prefix(cut)), id: id), .noQuestionEcho, "cut \(cut)")
        }
        // Another question (a different service): not ours.
        var other = answer()
        other[13] = UInt8(ascii: "x")
        XCTAssertEqual(MulticastQuery.judge(other, id: id), .noQuestionEcho)
        // A header claiming 65535 questions and answers but nothing behind it.
        XCTAssertEqual(
            MulticastQuery.judge([0xBE, 0xEF, 0x84, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], id: id),
            .noQuestionEcho)
    }

    func testCaseAndTheQUBitOfTheEchoedQuestionDoNotMatter() {
        var p = answer()
        p[14] = UInt8(ascii: "P")  // "_Parley"
        p[12 + MulticastQuery.question.count - 2] |= 0x80  // QU bit set in the echoed class
        XCTAssertEqual(MulticastQuery.judge(p, id: id), nil)
    }

    func testRandomBytesNeverCrashAndAreAlmostNeverAnswers() {
        var rng = SystemRandomNumberGenerator()
        var accepted = 0
        for _ in 0..<20_000 {
            let n = Int.random(in: 0...80, using: &rng)
            var p = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if n >= 2 && Bool.random(using: &rng) {
                p[0] = 0xBE
                p[1] = 0xEF
            }
            if MulticastQuery.judge(p, id: id) == nil { accepted += 1 }
        }
        XCTAssertEqual(accepted, 0)
    }
}
