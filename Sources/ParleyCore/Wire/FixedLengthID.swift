/// A value that is exactly `length` bytes on the wire and hex for people: message ids,
/// room ids, room operation hashes. One place for parsing and printing them.
public protocol FixedLengthID: Hashable, Sendable, CustomStringConvertible {
    static var length: Int { get }
    var bytes: [UInt8] { get }
    /// For bytes whose length the caller has just guaranteed (a fixed-size read, a
    /// hash output). Traps otherwise: a wrong length here is a programming error.
    init(exactly bytes: [UInt8])
}

extension FixedLengthID {
    /// Nil unless `bytes` has exactly `length` bytes (untrusted input).
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.length else { return nil }
        self.init(exactly: bytes)
    }

    /// Nil unless `hex` is `2 × length` hex digits.
    public init?(hex: String) {
        guard let b = Sodium.fromHex(hex) else { return nil }
        self.init(bytes: b)
    }

    public var hex: String { Sodium.hex(bytes) }
    public var description: String { hex }
}

/// `hash(into:)` for a type that is its bytes (the ids here, `IdentityPublicKey`): the
/// bytes in one call. The synthesized conformance hashes a `[UInt8]` as its count and then
/// each byte by itself, a call into the hasher per byte: ~12,000 instructions per message
/// on the sender (every dictionary and set keyed by a message id or a peer's key,
/// docs/BENCHMARKS.md "issue 32 part 8"). Equal values have equal bytes, so they hash
/// alike; the length is fixed per type, so leaving it out merges nothing.
@inlinable
public func hashFixedLengthBytes(_ bytes: [UInt8], into hasher: inout Hasher) {
    bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
}
