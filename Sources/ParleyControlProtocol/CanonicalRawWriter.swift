/// A type on the message path whose canonical JSON is written straight into the spare
/// capacity of the caller's buffer (`CanonicalRawWriter.append`): one capacity check for the
/// whole value instead of one per key, quote and value, as `CanonicalObjectWriter` does over
/// a Swift `Array` (~10 k instructions a message line; docs/BENCHMARKS.md, "part 5b").
/// Conformers write exactly what their `encode(to:)` gives through `ControlJSON.encoder()`.
protocol CanonicalJSONRawWritable {
    /// At least the number of bytes `writeCanonicalJSON(to:)` writes: strings counted at their
    /// worst (`CanonicalRawWriter.maxLength(_:)`), integers at 20 bytes. The writer traps
    /// rather than write past it.
    var canonicalJSONMaxLength: Int { get }
    func writeCanonicalJSON(to w: inout CanonicalRawWriter)
}

/// Writes JSON into memory sized beforehand by the value's `canonicalJSONMaxLength`. Object
/// keys are written as static text with their punctuation (`,"createdAt":`), in sorted
/// order, by the caller.
struct CanonicalRawWriter {
    private var next: UnsafeMutablePointer<UInt8>
    private let end: UnsafeMutablePointer<UInt8>
    private let start: UnsafeMutablePointer<UInt8>

    /// Bytes of an integer at most: a sign and 19 digits (`Int.min`). `null` fits too.
    static let maxIntLength = 20
    /// `false` or `null`.
    static let maxBoolLength = 5

    /// A string at its worst: quotes, and every byte a control written as `\u00xx`.
    static func maxLength(_ s: String) -> Int { 2 + 6 * s.utf8.count }
    static func maxLength(_ s: String?) -> Int { s.map { maxLength($0) } ?? 4 }
    static func maxLength(_ v: (some CanonicalJSONRawWritable)?) -> Int { v?.canonicalJSONMaxLength ?? 4 }
    /// Brackets, and a comma after each element.
    static func maxLength(_ elements: [some CanonicalJSONRawWritable]) -> Int {
        elements.reduce(2) { $0 + $1.canonicalJSONMaxLength + 1 }
    }
    static func maxLength(_ strings: [String]) -> Int { strings.reduce(2) { $0 + maxLength($1) + 1 } }

    private init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        start = buffer.baseAddress!
        next = start
        end = start + buffer.count
    }

    /// Appends `value`'s JSON to `out`, written in place in `out`'s spare capacity.
    static func append(_ value: some CanonicalJSONRawWritable, to out: inout [UInt8]) {
        let needed = out.count + value.canonicalJSONMaxLength
        if out.capacity < needed {
            // Doubling: `reserveCapacity` alone grows to exactly `needed`, which for a buffer
            // that takes line after line would copy it at every line.
            out.reserveCapacity(Swift.max(needed, 2 * out.capacity))
        }
        out.append(contentsOf: SpareCapacityWrite(value: value, maxLength: needed - out.count))
    }

    /// `Array.append(contentsOf:)` hands a sequence the array's spare capacity to copy itself
    /// into (`_copyContents(initializing:)`) and adds what it wrote to the count: the only
    /// way to write into an array's capacity in place without initializing it first. It
    /// reports no elements in advance (`underestimatedCount` 0), so the array reserves
    /// nothing itself; `append(_:to:)` has reserved `canonicalJSONMaxLength`.
    private struct SpareCapacityWrite<Value: CanonicalJSONRawWritable>: Sequence {
        let value: Value
        let maxLength: Int
        var underestimatedCount: Int { 0 }
        func makeIterator() -> EmptyCollection<UInt8>.Iterator { EmptyCollection<UInt8>.Iterator() }

        func _copyContents(initializing buffer: UnsafeMutableBufferPointer<UInt8>) -> (
            EmptyCollection<UInt8>.Iterator, Int
        ) {
            precondition(buffer.count >= maxLength && maxLength > 0, "canonical JSON: capacity not reserved")
            var writer = CanonicalRawWriter(UnsafeMutableBufferPointer(rebasing: buffer[..<maxLength]))
            value.writeCanonicalJSON(to: &writer)
            return (makeIterator(), writer.next - writer.start)
        }
    }

    private mutating func reserve(_ count: Int) {
        precondition(end - next >= count, "canonical JSON: longer than its maximum length")
    }

    mutating func byte(_ b: UInt8) {
        reserve(1)
        next.initialize(to: b)
        next += 1
    }

    /// Static text: a key with its quotes, colon and leading comma, a brace, `null`.
    mutating func raw(_ text: StaticString) {
        let count = text.utf8CodeUnitCount
        reserve(count)
        next.initialize(from: text.utf8Start, count: count)
        next += count
    }

    mutating func int(_ value: Int) {
        reserve(Self.maxIntLength)
        var magnitude = value.magnitude
        if value < 0 {
            next.initialize(to: UInt8(ascii: "-"))
            next += 1
        }
        var digits = 1
        var rest = magnitude / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        // Last digit first, from the end of the number's place.
        var k = digits
        repeat {
            k -= 1
            next[k] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
        next += digits
    }

    /// `null` when nil, as the protocol's types encode their optional fields.
    mutating func int(_ value: Int?) {
        guard let value else { return raw("null") }
        int(value)
    }

    mutating func bool(_ value: Bool) {
        raw(value ? "true" : "false")
    }

    mutating func value(_ value: (some CanonicalJSONRawWritable)?) {
        guard let value else { return raw("null") }
        value.writeCanonicalJSON(to: &self)
    }

    mutating func array(_ elements: [some CanonicalJSONRawWritable]) {
        byte(UInt8(ascii: "["))
        for (i, e) in elements.enumerated() {
            if i > 0 { byte(UInt8(ascii: ",")) }
            e.writeCanonicalJSON(to: &self)
        }
        byte(UInt8(ascii: "]"))
    }

    mutating func array(_ strings: [String]) {
        byte(UInt8(ascii: "["))
        for (i, s) in strings.enumerated() {
            if i > 0 { byte(UInt8(ascii: ",")) }
            string(s)
        }
        byte(UInt8(ascii: "]"))
    }

    mutating func string(_ value: String?) {
        guard let value else { return raw("null") }
        string(value)
    }

    /// JSON string escaping as Foundation does it (`CanonicalNode.writeString`): `"` and `\`
    /// escaped, the C0 controls as `\b \f \n \r \t` or `\u00xx`; everything else, `/` and
    /// non-ASCII included, as is. Runs without an escape are copied at once.
    mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { bytes in
            reserve(2 + 6 * bytes.count)
            var p = next
            p.initialize(to: UInt8(ascii: "\""))
            p += 1
            var runStart = 0
            var i = 0
            let count = bytes.count
            while i < count {
                // Eight bytes at a time while none needs escaping (most text), then byte by
                // byte to the end of the word that has one.
                while i &+ 8 <= count,
                    !Self.needsEscape(UnsafeRawPointer(bytes.baseAddress! + i).loadUnaligned(as: UInt64.self))
                {
                    i &+= 8
                }
                let wordEnd = Swift.min(i &+ 8, count)
                while i < wordEnd {
                    let byte = bytes[i]
                    // One comparison for the common case: printable and not `"` or `\`.
                    guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else {
                        i += 1
                        continue
                    }
                    p = Self.copy(bytes, runStart..<i, to: p)
                    p[0] = UInt8(ascii: "\\")
                    switch byte {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"): p[1] = byte
                    case 0x08: p[1] = UInt8(ascii: "b")
                    case 0x0C: p[1] = UInt8(ascii: "f")
                    case 0x0A: p[1] = UInt8(ascii: "n")
                    case 0x0D: p[1] = UInt8(ascii: "r")
                    case 0x09: p[1] = UInt8(ascii: "t")
                    default:
                        p[1] = UInt8(ascii: "u")
                        p[2] = UInt8(ascii: "0")
                        p[3] = UInt8(ascii: "0")
                        p[4] = Self.hexDigit(byte >> 4)
                        p[5] = Self.hexDigit(byte & 0x0F)
                        p += 4
                    }
                    p += 2
                    i += 1
                    runStart = i
                }
            }
            p = Self.copy(bytes, runStart..<count, to: p)
            p.initialize(to: UInt8(ascii: "\""))
            next = p + 1
        }
    }

    private static func copy(
        _ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, to p: UnsafeMutablePointer<UInt8>
    ) -> UnsafeMutablePointer<UInt8> {
        guard !range.isEmpty, let base = bytes.baseAddress else { return p }
        p.initialize(from: base + range.lowerBound, count: range.count)
        return p + range.count
    }

    /// Whether any of the eight bytes in `word` is a control (below 0x20), `"` or `\`: the
    /// exact "has a byte less than n" and "has a zero byte" tests of Bit Twiddling Hacks
    /// (S. E. Anderson); bytes from 0x80 up never count.
    private static func needsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        let control = (word &- ones &* 0x20) & ~word & high
        let quote = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
        let backslash = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
        let zero = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
        return (control | zero) & high != 0
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10)
    }
}
