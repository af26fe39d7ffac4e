/// A strict RFC 8259 parser from UTF-8 bytes to `JSONValue`, for control-socket lines.
///
/// Written out rather than going through `JSONDecoder` into `JSONValue`: that decodes
/// each value by trying every type in turn through generic `Codable` calls and was most
/// of the cost of a control request (docs/BENCHMARKS.md). Rules: exactly one value with
/// optional whitespace around it; no comments, trailing commas, leading zeros, `NaN` or
/// raw control characters in strings; `\u` escapes must form valid scalars (surrogates in
/// pairs); a member name may appear once per object; nesting is bounded by `maxDepth`. Numbers without fraction or exponent
/// that fit in `Int` are `.int`; every other number is `.double`. The input must already
/// be valid UTF-8 (the caller checks), so string contents are copied as they are.
struct JSONTextParser {
    enum Failure: Error, Equatable {
        case syntax(offset: Int, what: String)
        /// More than `maxDepth` arrays/objects open at once; reported before any deeper
        /// value is looked at, so `[[[[…` costs a bounded stack and no allocation per level.
        case tooDeep(maxDepth: Int)
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private let maxDepth: Int

    static func parse(_ line: [UInt8], maxDepth: Int) throws(Failure) -> JSONValue {
        try line.withUnsafeBufferPointer { (buffer) throws(Failure) -> JSONValue in
            var parser = JSONTextParser(bytes: buffer, maxDepth: maxDepth)
            parser.skipWhitespace()
            let value = try parser.parseValue(depth: 0)
            parser.skipWhitespace()
            guard parser.index == buffer.count else { throw parser.fail("content after the JSON value") }
            return value
        }
    }

    private init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    private func fail(_ what: String) -> Failure { .syntax(offset: index, what: what) }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func expect(_ literal: StaticString, _ value: JSONValue) throws(Failure) -> JSONValue {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw fail("unknown literal") }
        let start = literal.utf8Start
        for k in 0..<count where bytes[index + k] != start[k] { throw fail("unknown literal") }
        index += count
        return value
    }

    private mutating func parseValue(depth: Int) throws(Failure) -> JSONValue {
        guard let byte = current else { throw fail("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    private mutating func parseObject(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= maxDepth else { throw .tooDeep(maxDepth: maxDepth) }
        index += 1  // {
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            guard current == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let key = try parseString()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            guard members.updateValue(value, forKey: key) == nil else { throw fail("duplicate member name") }
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                index += 1
                return .object(members)
            default: throw fail("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= maxDepth else { throw .tooDeep(maxDepth: maxDepth) }
        index += 1  // [
        var items: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            items.append(try parseValue(depth: depth))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "]"):
                index += 1
                return .array(items)
            default: throw fail("expected ',' or ']'")
            }
        }
    }

    private mutating func parseString() throws(Failure) -> String {
        index += 1  // opening quote
        let start = index
        // Fast path: no escapes, copied in one go.
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return s
            }
            if b == UInt8(ascii: "\\") { break }
            if b < 0x20 { throw fail("control character in a string") }
            index += 1
        }
        var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<min(index, bytes.count)]))
        while index < bytes.count {
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard let e = current else { throw fail("unterminated escape") }
                index += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"): out.append(contentsOf: try parseUnicodeEscape())
                default: throw fail("invalid escape")
                }
            default:
                if b < 0x20 { throw fail("control character in a string") }
                out.append(b)
                index += 1
            }
        }
        throw fail("unterminated string")
    }

    /// After `\u`: four hex digits, and for a high surrogate a following `\uDC00-DFFF`.
    private mutating func parseUnicodeEscape() throws(Failure) -> String.UTF8View {
        let first = try parseHex4()
        var scalarValue = UInt32(first)
        if (0xD800...0xDBFF).contains(first) {
            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else {
                throw fail("unpaired surrogate")
            }
            index += 2
            let second = try parseHex4()
            guard (0xDC00...0xDFFF).contains(second) else { throw fail("unpaired surrogate") }
            scalarValue = 0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00)
        }
        guard let scalar = Unicode.Scalar(scalarValue) else { throw fail("unpaired surrogate") }
        return String(Character(scalar)).utf8
    }

    private mutating func parseHex4() throws(Failure) -> UInt16 {
        guard bytes.count - index >= 4 else { throw fail("short \\u escape") }
        var v: UInt16 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw fail("bad hex digit in \\u escape")
            }
            v = v << 4 | UInt16(digit)
            index += 1
        }
        return v
    }

    private mutating func parseNumber() throws(Failure) -> JSONValue {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        guard let lead = current, lead >= UInt8(ascii: "0"), lead <= UInt8(ascii: "9") else { throw fail("bad number") }
        if lead == UInt8(ascii: "0") {
            index += 1
        } else {
            skipDigits()
        }
        var integral = true
        if current == UInt8(ascii: ".") {
            integral = false
            index += 1
            guard skipDigits() > 0 else { throw fail("bad number") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            integral = false
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard skipDigits() > 0 else { throw fail("bad number") }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if integral, let i = Int(text) { return .int(i) }
        guard let d = Double(text), d.isFinite else { throw fail("number out of range") }
        return .double(d)
    }

    @discardableResult
    private mutating func skipDigits() -> Int {
        let start = index
        while let b = current, b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") { index += 1 }
        return index - start
    }
}
