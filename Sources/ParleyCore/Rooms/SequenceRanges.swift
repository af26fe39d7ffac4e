/// A set of room sequence numbers (1, 2, 3, ...) kept as sorted, disjoint, non-adjacent
/// closed ranges: what a node holds of one author's messages in one room. Almost always a
/// single range `1...n`; holes only while sync is filling them.
public struct SequenceRanges: Equatable, Sendable {
    public private(set) var ranges: [ClosedRange<UInt64>] = []

    public init() {}

    /// From ranges in any order, overlapping or adjacent; empty ranges cannot exist.
    public init(_ ranges: [ClosedRange<UInt64>]) {
        for r in ranges { insert(r) }
    }

    public var isEmpty: Bool { ranges.isEmpty }
    public var count: UInt64 { ranges.reduce(0) { $0 &+ ($1.upperBound - $1.lowerBound &+ 1) } }
    /// The highest number held (nil when empty).
    public var last: UInt64? { ranges.last?.upperBound }

    public func contains(_ n: UInt64) -> Bool {
        // Binary search: ranges are sorted by lower bound.
        var lo = 0
        var hi = ranges.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if ranges[mid].upperBound < n { lo = mid + 1 } else { hi = mid }
        }
        return lo < ranges.count && ranges[lo].contains(n)
    }

    public mutating func insert(_ n: UInt64) { insert(n...n) }

    public mutating func insert(_ r: ClosedRange<UInt64>) {
        var merged = r
        var out: [ClosedRange<UInt64>] = []
        out.reserveCapacity(ranges.count + 1)
        var placed = false
        for x in ranges {
            // Disjoint and not adjacent: keep as it is, on the right side of `merged`.
            if x.upperBound < merged.lowerBound && merged.lowerBound - x.upperBound > 1 {
                out.append(x)
            } else if x.lowerBound > merged.upperBound && x.lowerBound - merged.upperBound > 1 {
                if !placed {
                    out.append(merged)
                    placed = true
                }
                out.append(x)
            } else {
                merged = min(x.lowerBound, merged.lowerBound)...max(x.upperBound, merged.upperBound)
            }
        }
        if !placed { out.append(merged) }
        ranges = out
    }

    /// The numbers held here and not in `other`, lowest first, at most `limit` of them.
    /// Works range by range (a steady-state comparison of two `1...10000` costs nothing).
    public func subtracting(_ other: SequenceRanges, limit: Int) -> [UInt64] {
        var out: [UInt64] = []
        guard limit > 0 else { return out }
        for r in ranges {
            var next = r.lowerBound  // the lowest number of `r` not yet considered
            var done = false
            for o in other.ranges where !done && o.upperBound >= next && o.lowerBound <= r.upperBound {
                // Numbers from `next` up to just below `o` are missing from `other`.
                if o.lowerBound > next {
                    var n = next
                    while n < o.lowerBound {
                        out.append(n)
                        if out.count >= limit { return out }
                        n += 1
                    }
                }
                if o.upperBound >= r.upperBound { done = true } else { next = o.upperBound + 1 }
            }
            if done { continue }
            var n = next
            while true {
                out.append(n)
                if out.count >= limit { return out }
                if n == r.upperBound { break }
                n += 1
            }
        }
        return out
    }

    /// At most `maxRanges` ranges, the lowest: what a summary may claim. Never more than
    /// is held (claiming a number not held would make the other side withhold it).
    public func prefix(_ maxRanges: Int) -> SequenceRanges {
        var s = SequenceRanges()
        s.ranges = Array(ranges.prefix(maxRanges))
        return s
    }
}
