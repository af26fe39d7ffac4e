import ParleyCore

/// Arbitrary bytes as decrypted session plaintext: through `RecordStreamDecoder` whole
/// and in pieces (the pieces stand for Noise messages), and directly through
/// `AppRecord.decode` with the first byte as the record type.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAppRecord(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []

    var whole = RecordStreamDecoder()
    whole.append(bytes)
    let expected = drain(&whole)

    var split = RecordStreamDecoder()
    var records: [AppRecord] = []
    var failed: AppRecordError?
    var offset = 0
    var piece = 0
    while offset < bytes.count, failed == nil {
        // Piece sizes 1...32, taken from the data so every input splits its own way.
        let length = min(bytes.count - offset, Int(bytes[piece % bytes.count] & 0x1F) + 1)
        piece += 1
        split.append(Array(bytes[offset..<(offset + length)]))
        offset += length
        let result = drain(&split)
        records += result.records
        failed = result.error
    }
    precondition(records == expected.records, "records differ between one chunk and many")
    precondition(failed == expected.error, "errors differ between one chunk and many")

    if let type = bytes.first {
        let payload = Array(bytes.dropFirst())
        if let record = try? AppRecord.decode(type: type, payload: payload) {
            checkRoundTrip(record)
        }
    }
    return 0
}

private func drain(_ decoder: inout RecordStreamDecoder) -> (records: [AppRecord], error: AppRecordError?) {
    var records: [AppRecord] = []
    do {
        while let record = try decoder.next() {
            checkRoundTrip(record)
            records.append(record)
        }
        // Drained: what is left is the start of one record, which the limit bounds.
        precondition(decoder.bufferedByteCount < WireLimits.maxRecordBytes)
        return (records, nil)
    } catch {
        return (records, error)
    }
}

/// A record we accepted must encode to something we accept again as the same record.
/// `close` is left out: its text is informational, decoded leniently (invalid UTF-8
/// becomes U+FFFD) and cut to a byte limit when encoded, so it need not round-trip; nor
/// does a file transfer's `end` (the same lenient reason text, and an unknown outcome byte
/// read as `failed`).
private func checkRoundTrip(_ record: AppRecord) {
    switch record {
    case .unknown, .close, .file(.end):
        return
    case .roomMessage(.badSignature):
        // Decoded only (a signature that does not verify): nothing encodes one.
        return
    case .chat, .ack, .cardUpdate, .ping, .pong, .readReceipt, .roomOperation, .roomChat, .listenPorts, .refused,
        .messageAction, .status, .file, .addressRecord, .contactTags, .dialBackRequest, .dialBackResult,
        .roomMessage(.verified), .roomHave, .roomCard, .roomOpsHave:
        var decoder = RecordStreamDecoder()
        decoder.append(record.encoded())
        let again = try? decoder.next()
        precondition(again == record, "record does not survive encode/decode")
    }
}
