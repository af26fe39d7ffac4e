/// Event params whose notification line is written by hand, `eventId` merged in its sorted
/// place: `message.received` and `message.delivered` are sent once per message, and the
/// generic route (a params wrapper through `Codable`, boxed and re-sorted) cost about
/// 30,000 instructions a line in callgrind (docs/BENCHMARKS.md). The bytes must be exactly
/// those of the generic route; the tests compare the two.
public protocol ControlEventParamsWritable: ControlEventParams {
    /// The params object with `eventId` (when not nil) among its keys in sorted order.
    func writeCanonicalJSON(eventID: Int?, into out: inout [UInt8])
}

/// A whole notification line: `{"jsonrpc":"2.0","method":…,"params":…}` (keys sorted).
public enum ControlEventLine {
    public static func bytes(method: String, params: some ControlEventParamsWritable, eventID: Int?) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        write(method: method, params: params, eventID: eventID, appendingTo: &out)
        return out
    }

    /// The line appended to `out`, a buffer the caller reuses (the journal writes every
    /// notification of a flush into one, whose capacity stays from flush to flush).
    public static func write(
        method: String, params: some ControlEventParamsWritable, eventID: Int?, appendingTo out: inout [UInt8]
    ) {
        out.append(contentsOf: prefix)
        CanonicalNode.writeString(method, into: &out)
        out.append(contentsOf: paramsKey)
        params.writeCanonicalJSON(eventID: eventID, into: &out)
        out.append(UInt8(ascii: "}"))
    }

    private static let prefix = Array("{\"jsonrpc\":\"\(JSONRPCVersion.string)\",\"method\":".utf8)
    private static let paramsKey = Array(",\"params\":".utf8)
}

extension MessageDeliveredEvent: ControlEventParamsWritable {
    public func writeCanonicalJSON(eventID: Int?, into out: inout [UInt8]) {
        CanonicalRawWriter.append(MessageDeliveredParams(event: self, eventID: eventID), to: &out)
    }
}

/// `message.delivered`'s params with `eventId` in its sorted place, written in place in the
/// output buffer (`CanonicalRawWriter`).
private struct MessageDeliveredParams: CanonicalJSONRawWritable {
    let event: MessageDeliveredEvent
    let eventID: Int?

    /// Keys with their punctuation and the braces: 39 bytes, rounded up.
    var canonicalJSONMaxLength: Int {
        64 + 2 * CanonicalRawWriter.maxIntLength + CanonicalRawWriter.maxLength(event.id)
            + CanonicalRawWriter.maxLength(event.to)
    }

    func writeCanonicalJSON(to w: inout CanonicalRawWriter) {
        w.raw("{\"deliveredAt\":")
        w.int(event.deliveredAt)
        if let eventID {
            w.raw(",\"eventId\":")
            w.int(eventID)
        }
        w.raw(",\"id\":")
        w.string(event.id)
        w.raw(",\"to\":")
        w.string(event.to)
        w.raw("}")
    }
}

extension MessageReceivedEvent: ControlEventParamsWritable {
    public func writeCanonicalJSON(eventID: Int?, into out: inout [UInt8]) {
        var o = CanonicalObjectWriter(into: &out)
        if let eventID { o.int("eventId", eventID, &out) }
        o.value("message", message, &out)
        o.end(&out)
    }
}

/// By hand: the answer to every `messages.send` (keys sorted; nil optionals omitted, as
/// the synthesized `encode(to:)` does).
extension MessagesSendResult: CanonicalJSONWritable {
    public func writeCanonicalJSON(into out: inout [UInt8]) {
        var o = CanonicalObjectWriter(into: &out)
        o.value("message", message, &out)
        if let peerOnline { o.bool("peerOnline", peerOnline, &out) }
        if let roomRecipients { o.int("roomRecipients", roomRecipients, &out) }
        if let roomRecipientsOnline { o.int("roomRecipientsOnline", roomRecipientsOnline, &out) }
        o.end(&out)
    }
}

/// By hand when the result is: `{"id":…,"jsonrpc":"2.0","result":…}`.
extension JSONRPCTypedSuccess: CanonicalJSONWritable where Result: CanonicalJSONWritable {
    public func writeCanonicalJSON(into out: inout [UInt8]) {
        var o = CanonicalObjectWriter(into: &out)
        switch id {
        case .none: o.null("id", &out)
        case .number(let n)?: o.int("id", n, &out)
        case .string(let s)?: o.string("id", s, &out)
        }
        o.string("jsonrpc", JSONRPCVersion.string, &out)
        o.value("result", result, &out)
        o.end(&out)
    }
}
