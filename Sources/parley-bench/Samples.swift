/// Durations in nanoseconds, summarised the way the table reports them.
struct Samples {
    private(set) var values: [UInt64] = []

    init() {}
    init(_ values: [UInt64]) { self.values = values }

    mutating func add(_ ns: UInt64) { values.append(ns) }
    var count: Int { values.count }
    var isEmpty: Bool { values.isEmpty }

    /// The q-quantile by the nearest-rank method (q in 0...1); 0 when empty.
    func quantile(_ q: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((q * Double(sorted.count)).rounded(.up))
        return Double(sorted[min(max(rank, 1), sorted.count) - 1])
    }

    var median: Double { quantile(0.5) }
    var p99: Double { quantile(0.99) }
    var mean: Double { values.isEmpty ? 0 : Double(values.reduce(0, +)) / Double(values.count) }
}
