import ParleyCore

/// Arbitrary bytes as a card (from a handshake payload, a card-update record or the
/// store). A card that decodes must re-encode to exactly the input: the signature
/// covers the encoding, so two encodings of one card would be a malleability bug.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCardDecoder(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    guard let card = try? Card.decode(bytes) else { return 0 }
    precondition(card.encoded() == bytes, "a decoded card re-encodes differently")
    precondition(bytes.count >= Card.minEncodedLength && bytes.count <= Card.maxEncodedLength)
    _ = card.fingerprint.description
    _ = card.isExpired(now: 0)
    return 0
}
