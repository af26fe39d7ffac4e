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

    /// The bytes hashed as one buffer (what every conforming type's `Hashable` uses instead
    /// of the synthesized byte-by-byte hash of the array).
    public func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
}
