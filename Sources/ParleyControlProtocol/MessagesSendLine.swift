/// The per-message request read without a `JSONValue` tree or `Codable`: a `messages.send`
/// line of the plain shape every client sends (`{"id":…,"jsonrpc":"2.0","method":
/// "messages.send","params":{"body":…,"to":…}}` in any member order, `wait` and `timeoutMs`
/// optional). The general route (`ControlRequestParser`, a dictionary of `JSONValue`s,
/// then `decodeParams` through `JSONValueDecoder`) cost about 30,000 instructions per
/// message in callgrind (docs/BENCHMARKS.md, issue 32 part 5).
///
/// It never decides an error of its own making: anything it does not fully understand
/// (an escape in a string, a duplicate or unknown member, `null`, a number with a fraction,
/// an exponent or more than 18 digits, a wrong type, another method, bytes after the object,
/// invalid UTF-8) gives nil, and the caller hands the line to the general route, which
/// answers it exactly as before. What it accepts the general route accepts too, with the
/// same id and params; the params then go through the same `validate()`, so its errors are
/// the general route's. `MessagesSendLineTests` and the fuzz target `FuzzJSONRPC` check
/// that agreement on hostile and random lines.
public enum MessagesSendLine {
    /// A plain `messages.send` line: its id (nil for a notification) and its params, or the
    /// error `validate()` gives them. Nil: the general route reads the line.
    public static func parse(_ line: [UInt8]) -> (id: JSONRPCID?, params: Result<MessagesSendParams, JSONRPCError>)? {
        line.withUnsafeBufferPointer { bytes in
            var reader = Reader(bytes: bytes)
            return reader.request()
        }
    }

    /// The most digits read as an `Int`: 18 always fit, so no overflow check is needed.
    static let maxIntegerDigits = 18

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        /// The OR of every string byte: a high bit set means the line must be checked as UTF-8.
        var stringBits: UInt8 = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func request() -> (id: JSONRPCID?, params: Result<MessagesSendParams, JSONRPCError>)? {
            var sawVersion = false
            var sawMethod = false
            var sawID = false
            var id: JSONRPCID?
            var params: MessagesSendParams?
            skipWhitespace()
            guard take(UInt8(ascii: "{")) else { return nil }
            skipWhitespace()
            guard !take(UInt8(ascii: "}")) else { return nil }
            while true {
                guard let key = plainString() else { return nil }
                skipWhitespace()
                guard take(UInt8(ascii: ":")) else { return nil }
                skipWhitespace()
                switch Key(key) {
                case .jsonrpc:
                    guard !sawVersion, let v = plainString(), bytesEqual(v, "2.0") else { return nil }
                    sawVersion = true
                case .method:
                    guard !sawMethod, let m = plainString(), bytesEqual(m, "messages.send") else { return nil }
                    sawMethod = true
                case .id:
                    guard !sawID else { return nil }
                    sawID = true
                    if let n = integer() {
                        id = .number(n)
                    } else if let s = plainString() {
                        id = .string(text(s))
                    } else {
                        return nil
                    }
                case .params:
                    guard params == nil, let p = sendParams() else { return nil }
                    params = p
                case nil:
                    return nil
                }
                skipWhitespace()
                if take(UInt8(ascii: ",")) {
                    skipWhitespace()
                    continue
                }
                guard take(UInt8(ascii: "}")) else { return nil }
                break
            }
            skipWhitespace()
            guard index == bytes.count, sawVersion, sawMethod, let params else { return nil }
            // Strings are copied as they are; the general route first checks the line is UTF-8.
            if stringBits & 0x80 != 0, String(validating: bytes, as: UTF8.self) == nil { return nil }
            do throws(JSONRPCError) {
                try params.validate()
            } catch {
                return (id, .failure(error))
            }
            return (id, .success(params))
        }

        private enum Key {
            case jsonrpc, method, id, params

            init?(_ name: UnsafeBufferPointer<UInt8>) {
                switch name.count {
                case 2 where bytesEqual(name, "id"): self = .id
                case 6 where bytesEqual(name, "method"): self = .method
                case 6 where bytesEqual(name, "params"): self = .params
                case 7 where bytesEqual(name, "jsonrpc"): self = .jsonrpc
                default: return nil
                }
            }
        }

        private enum ParamKey {
            case to, body, wait, timeoutMs

            init?(_ name: UnsafeBufferPointer<UInt8>) {
                switch name.count {
                case 2 where bytesEqual(name, "to"): self = .to
                case 4 where bytesEqual(name, "body"): self = .body
                case 4 where bytesEqual(name, "wait"): self = .wait
                case 9 where bytesEqual(name, "timeoutMs"): self = .timeoutMs
                default: return nil
                }
            }
        }

        /// `{"to":…,"body":…}` with `wait` (true or false) and `timeoutMs` (an integer) optional.
        private mutating func sendParams() -> MessagesSendParams? {
            var to: String?
            var body: String?
            var wait: Bool?
            var timeoutMs: Int?
            guard take(UInt8(ascii: "{")) else { return nil }
            skipWhitespace()
            guard !take(UInt8(ascii: "}")) else { return nil }
            while true {
                guard let key = plainString() else { return nil }
                skipWhitespace()
                guard take(UInt8(ascii: ":")) else { return nil }
                skipWhitespace()
                switch ParamKey(key) {
                case .to:
                    guard to == nil, let s = plainString() else { return nil }
                    to = text(s)
                case .body:
                    guard body == nil, let s = plainString() else { return nil }
                    body = text(s)
                case .wait:
                    guard wait == nil else { return nil }
                    if literal("true") {
                        wait = true
                    } else if literal("false") {
                        wait = false
                    } else {
                        return nil
                    }
                case .timeoutMs:
                    guard timeoutMs == nil, let n = integer() else { return nil }
                    timeoutMs = n
                case nil:
                    return nil
                }
                skipWhitespace()
                if take(UInt8(ascii: ",")) {
                    skipWhitespace()
                    continue
                }
                guard take(UInt8(ascii: "}")) else { return nil }
                break
            }
            guard let to, let body else { return nil }
            return MessagesSendParams(to: to, body: body, wait: wait, timeoutMs: timeoutMs)
        }

        private mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        private mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        private mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            for k in 0..<count where bytes[index + k] != word.utf8Start[k] { return false }
            index += count
            return true
        }

        /// A string without escapes or control characters: its bytes between the quotes.
        private mutating func plainString() -> UnsafeBufferPointer<UInt8>? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            var bits: UInt8 = 0
            while index < bytes.count {
                let b = bytes[index]
                if b == UInt8(ascii: "\"") {
                    stringBits |= bits
                    index += 1
                    return UnsafeBufferPointer(rebasing: bytes[start..<(index - 1)])
                }
                if b == UInt8(ascii: "\\") || b < 0x20 { return nil }
                bits |= b
                index += 1
            }
            return nil
        }

        /// `-?(0|[1-9][0-9]*)` of at most `maxIntegerDigits` digits, not followed by a
        /// fraction or an exponent (the general route reads those as doubles).
        private mutating func integer() -> Int? {
            var k = index
            let negative = k < bytes.count && bytes[k] == UInt8(ascii: "-")
            if negative { k += 1 }
            let digitsStart = k
            var value = 0
            while k < bytes.count, bytes[k] >= UInt8(ascii: "0"), bytes[k] <= UInt8(ascii: "9") {
                // Counted before the digit is taken: a 19th could overflow.
                guard k - digitsStart < MessagesSendLine.maxIntegerDigits else { return nil }
                value = value * 10 + Int(bytes[k] - UInt8(ascii: "0"))
                k += 1
            }
            let digits = k - digitsStart
            guard digits > 0, !(digits > 1 && bytes[digitsStart] == UInt8(ascii: "0")) else { return nil }
            if k < bytes.count,
                bytes[k] == UInt8(ascii: ".") || bytes[k] == UInt8(ascii: "e") || bytes[k] == UInt8(ascii: "E")
            {
                return nil
            }
            index = k
            return negative ? -value : value
        }

        private func text(_ s: UnsafeBufferPointer<UInt8>) -> String { String(decoding: s, as: UTF8.self) }

    }
}

/// Whether `s` is exactly `word`'s bytes.
private func bytesEqual(_ s: UnsafeBufferPointer<UInt8>, _ word: StaticString) -> Bool {
    guard s.count == word.utf8CodeUnitCount else { return false }
    for k in 0..<s.count where s[k] != word.utf8Start[k] { return false }
    return true
}
