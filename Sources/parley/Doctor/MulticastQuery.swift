/// `parley doctor`'s own mDNS question: a one-shot ("legacy unicast") query, RFC 6762 §5.1
/// and §6.7, for `_parley._tcp.local.` PTR. It is sent from an ephemeral port (not 5353) to
/// the mDNS group; a responder that holds Parley's service type (every avahi-daemon with a
/// Parley node registered) answers by unicast to that port, echoing the query ID and the
/// question (avahi: avahi-core/server.c `dispatch_packet`, source port != 5353 is a legacy
/// unicast query; it must carry no answer or authority records). An answer from an address
/// that is not one of ours proves our multicast left the host and a peer heard it.
///
/// Pure bytes in, bytes out: `HostProbes.queryMulticast` does the socket work. Every packet
/// read is hostile (anyone on the link can send to our port): it is only accepted when its
/// header and question echo ours, checked within bounds; nothing in it is trusted further.
enum MulticastQuery {
    /// The service type asked for, as DNS labels.
    static let labels = ["_parley", "_tcp", "local"]
    /// Where mDNS queries go (RFC 6762 §3).
    static let groupV4 = "224.0.0.251"
    static let groupV6 = "ff02::fb"
    static let port: UInt16 = 5353
    /// How long the doctor waits for an answer in all: a responder delays a shared answer by
    /// 20–120 ms (RFC 6762 §6), and a retry is sent halfway in case the first was lost.
    static let waitMs = 2_000
    /// The single retry, after this long without a peer's answer.
    static let retryAfterMs = 1_000
    /// Datagrams read at most: a hostile host flooding our port cannot keep us reading.
    static let maxPacketsRead = 64
    /// Largest datagram read; longer ones are cut (and then fail the checks below only if
    /// the cut reaches the header or question).
    static let maxPacketBytes = 9_000

    /// DNS header (RFC 1035 §4.1.1): ID, flags, QDCOUNT, ANCOUNT, NSCOUNT, ARCOUNT.
    static let headerBytes = 12
    static let typePTR: UInt16 = 12
    static let classIN: UInt16 = 1

    /// The question section: the name, type PTR, class IN (no unicast-response bit: a legacy
    /// querier's port already tells the responder to answer by unicast).
    static var question: [UInt8] {
        var q: [UInt8] = []
        for l in labels {
            q.append(UInt8(l.utf8.count))
            q += Array(l.utf8)
        }
        q.append(0)
        q += [UInt8(typePTR >> 8), UInt8(typePTR & 0xFF), UInt8(classIN >> 8), UInt8(classIN & 0xFF)]
        return q
    }

    /// The query datagram with ID `id` (nonzero: RFC 6762 §6.7 wants the ID echoed, and a
    /// random one keeps an off-path host from answering for a peer). Flags all zero:
    /// a standard query.
    static func query(id: UInt16) -> [UInt8] {
        [UInt8(id >> 8), UInt8(id & 0xFF), 0, 0, 0, 1, 0, 0, 0, 0, 0, 0] + question
    }

    /// Why a datagram is not an answer to our query (for tests and debug output).
    enum Rejection: Equatable {
        case tooShort, wrongID, notAResponse, badOpcodeOrError, noQuestionEcho, noAnswers
    }

    /// Whether `packet` answers query `id`: the same ID, a response (QR) with opcode 0 and no
    /// error, our question echoed as its first question (names compared case-insensitively,
    /// RFC 6762 §16), and at least one answer record. Bounded: reads only the header and
    /// question bytes it compares.
    static func judge(_ packet: [UInt8], id: UInt16) -> Rejection? {
        guard packet.count >= headerBytes else { return .tooShort }
        guard UInt16(packet[0]) << 8 | UInt16(packet[1]) == id else { return .wrongID }
        let flags = UInt16(packet[2]) << 8 | UInt16(packet[3])
        guard flags & 0x8000 != 0 else { return .notAResponse }
        // Opcode (bits 11-14) 0, RCODE (bits 0-3) 0.
        guard flags & 0x7800 == 0, flags & 0x000F == 0 else { return .badOpcodeOrError }
        let qdcount = UInt16(packet[4]) << 8 | UInt16(packet[5])
        let ancount = UInt16(packet[6]) << 8 | UInt16(packet[7])
        let q = question
        guard qdcount >= 1, packet.count >= headerBytes + q.count else { return .noQuestionEcho }
        let classHigh = q.count - 2  // its top bit is the QU bit (RFC 6762 §5.4): not compared
        for (i, expected) in q.enumerated() {
            var got = packet[headerBytes + i]
            if i == classHigh { got &= 0x7F }
            guard asciiLower(got) == asciiLower(expected) else { return .noQuestionEcho }
        }
        guard ancount >= 1 else { return .noAnswers }
        return nil
    }

    static func asciiLower(_ b: UInt8) -> UInt8 { (b >= 0x41 && b <= 0x5A) ? b + 0x20 : b }
}
