/// A bounds-checked cursor over untrusted bytes. Every read either returns exactly
/// what was asked for or throws: nothing reads past the end, nothing trusts a length.
public struct ByteReader {
    public enum Error: Swift.Error, Equatable, Sendable {
        case truncated(needed: Int, available: Int)
    }

    /// A slice, so a record can be read where it lies in the record stream's buffer (no
    /// copy of the payload first); `offset` counts from the slice's start.
    private let bytes: ArraySlice<UInt8>
    public private(set) var offset: Int

    public init(_ bytes: [UInt8], offset: Int = 0) {
        self.init(bytes[...], offset: offset)
    }

    public init(_ bytes: ArraySlice<UInt8>, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    public var remaining: Int { bytes.count - offset }
    public var isAtEnd: Bool { offset >= bytes.count }

    public mutating func readBytes(_ n: Int) throws(Error) -> [UInt8] {
        guard n >= 0, n <= remaining else { throw .truncated(needed: n, available: remaining) }
        defer { offset += n }
        let start = bytes.startIndex + offset
        return Array(bytes[start..<start + n])
    }

    public mutating func readUInt8() throws(Error) -> UInt8 {
        guard remaining >= 1 else { throw .truncated(needed: 1, available: remaining) }
        defer { offset += 1 }
        return bytes[bytes.startIndex + offset]
    }

    public mutating func readUInt16() throws(Error) -> UInt16 {
        let b = try readBytes(2)
        return UInt16(b[0]) << 8 | UInt16(b[1])
    }

    public mutating func readUInt32() throws(Error) -> UInt32 {
        let b = try readBytes(4)
        return b.reduce(0) { $0 << 8 | UInt32($1) }
    }

    public mutating func readUInt64() throws(Error) -> UInt64 {
        let b = try readBytes(8)
        return b.reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// Big-endian appends, the mirror of `ByteReader`.
extension Array where Element == UInt8 {
    @inlinable mutating func appendUInt16(_ v: UInt16) {
        append(UInt8(truncatingIfNeeded: v >> 8))
        append(UInt8(truncatingIfNeeded: v))
    }
    @inlinable mutating func appendUInt32(_ v: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }
    @inlinable mutating func appendUInt64(_ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }
}
