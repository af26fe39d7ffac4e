/// IPv4 and IPv6 literals to bytes and back, without the C library (the core does no I/O
/// and must parse the same on every platform).
public enum IPAddressText {
    /// 4 bytes for a dotted quad, 16 for an IPv6 literal (with `::`, optionally a trailing
    /// dotted quad; brackets and zone ids are refused); nil for anything else.
    public static func parse(_ text: String) -> [UInt8]? {
        if text.contains(":") { return parse6(text) }
        return parse4(Substring(text))
    }

    static func parse4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for p in parts {
            guard !p.isEmpty, p.count <= 3, p.allSatisfy(\.isASCII), let v = UInt8(p),
                p == "0" || !p.hasPrefix("0")
            else { return nil }
            out.append(v)
        }
        return out
    }

    static func parse6(_ text: String) -> [UInt8]? {
        guard text.utf8.count <= 45 else { return nil }
        let halves = text.splitAtDoubleColons()
        guard halves.count <= 2 else { return nil }
        func groups(_ s: Substring) -> [UInt8]? {
            if s.isEmpty { return [] }
            var out: [UInt8] = []
            let items = s.split(separator: ":", omittingEmptySubsequences: false)
            for (i, item) in items.enumerated() {
                if i == items.count - 1, item.contains(".") {
                    guard let v4 = parse4(item) else { return nil }
                    out += v4
                    continue
                }
                guard (1...4).contains(item.count), let v = UInt16(item, radix: 16) else { return nil }
                out += [UInt8(v >> 8), UInt8(v & 0xFF)]
            }
            return out
        }
        if halves.count == 1 {
            guard let g = groups(halves[0]), g.count == 16 else { return nil }
            return g
        }
        guard let head = groups(halves[0]), let tail = groups(halves[1]), head.count + tail.count <= 14 else {
            return nil
        }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }

    /// Dotted quad, or RFC 5952 text for IPv6 (lower case, longest zero run as `::`).
    public static func format(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        guard bytes.count == 16 else { return "?" }
        let groups = (0..<8).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
        var bestStart = -1
        var bestLen = 0
        var i = 0
        while i < 8 {
            if groups[i] == 0 {
                var j = i
                while j < 8, groups[j] == 0 { j += 1 }
                if j - i > bestLen, j - i >= 2 {
                    bestStart = i
                    bestLen = j - i
                }
                i = j
            } else {
                i += 1
            }
        }
        func hex(_ r: Range<Int>) -> String { r.map { String(groups[$0], radix: 16) }.joined(separator: ":") }
        if bestStart < 0 { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLen)..<8)
    }
}

extension String {
    /// Splits at "::" (at most the pieces around each occurrence).
    fileprivate func splitAtDoubleColons() -> [Substring] {
        var out: [Substring] = []
        var start = startIndex
        var i = startIndex
        while i < endIndex {
            let next = index(after: i)
            if self[i] == ":", next < endIndex, self[next] == ":" {
                out.append(self[start..<i])
                start = index(after: next)
                i = start
                continue
            }
            i = next
        }
        out.append(self[start..<endIndex])
        return out
    }
}
