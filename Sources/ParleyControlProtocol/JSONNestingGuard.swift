/// A linear scan that finds how deeply a JSON text nests, without parsing it, so lines
/// like `[[[[...` are refused before any recursive decoder sees them.
enum JSONNestingGuard {
    /// True if `bytes` opens more than `limit` arrays/objects at once. Brackets inside
    /// strings are skipped (escapes honoured). On malformed input the answer is only a
    /// bound on what a parser would try to nest, which is what matters.
    static func exceeds(_ limit: Int, in bytes: [UInt8]) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { return true }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth = max(0, depth - 1)
            default:
                break
            }
        }
        return false
    }
}
