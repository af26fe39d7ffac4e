/// One line of the results table: Parley's figure beside its reference measured in the
/// same run, their ratio, the goal and whether it was met.
struct BenchRow: Codable, Sendable {
    enum Status: String, Codable, Sendable {
        case pass = "PASS", miss = "MISS"
        /// Shown for context; the issue sets no goal for it.
        case info = "INFO"
        /// Could not be measured here (the note says why).
        case skipped = "SKIP"
        /// Parley was measured but its reference was not, so the goal cannot be judged.
        case noReference = "NO REF"
    }

    /// How a row's goal is judged. Ratios are always Parley / reference.
    enum Goal: Sendable {
        case none
        case ratioAtMost(Double)
        case ratioAtLeast(Double)
        case valueAtMost(Double)
        case valueAtLeast(Double)

        var text: String {
            switch self {
            case .none: return "—"
            case .ratioAtMost(let x): return "ratio ≤ \(fmt(x))"
            case .ratioAtLeast(let x): return "ratio ≥ \(fmt(x))"
            case .valueAtMost(let x): return "≤ \(fmt(x))"
            case .valueAtLeast(let x): return "≥ \(fmt(x))"
            }
        }
    }

    var id: String
    var measure: String
    var unit: String
    var parley: Double?
    var reference: Double?
    var referenceName: String
    var ratio: Double?
    var goal: String
    var status: Status
    var note: String

    init(
        id: String, measure: String, unit: String, parley: Double?, reference: Double?,
        referenceName: String, goal: Goal, note: String = ""
    ) {
        self.id = id
        self.measure = measure
        self.unit = unit
        self.parley = parley
        self.reference = reference
        self.referenceName = referenceName
        self.note = note
        if let p = parley, let r = reference, r > 0 { ratio = p / r } else { ratio = nil }
        let goalText = goal.text
        self.goal =
            goalText == "—" ? goalText : goalText + (unit.isEmpty || goalText.hasPrefix("ratio") ? "" : " \(unit)")
        guard let p = parley else {
            status = .skipped
            return
        }
        switch goal {
        case .none: status = .info
        case .valueAtMost(let x): status = p <= x ? .pass : .miss
        case .valueAtLeast(let x): status = p >= x ? .pass : .miss
        case .ratioAtMost(let x):
            if let r = ratio { status = r <= x ? .pass : .miss } else { status = .noReference }
        case .ratioAtLeast(let x):
            if let r = ratio { status = r >= x ? .pass : .miss } else { status = .noReference }
        }
    }

    /// A row that could not be measured at all.
    static func skipped(
        id: String, measure: String, unit: String, referenceName: String,
        goal: Goal, why: String
    ) -> BenchRow {
        BenchRow(
            id: id, measure: measure, unit: unit, parley: nil, reference: nil,
            referenceName: referenceName, goal: goal, note: why)
    }
}

/// Three significant digits, no exponent for the ranges the table shows.
func fmt(_ x: Double) -> String {
    if x == 0 { return "0" }
    let a = abs(x)
    if a >= 100_000 { return String(Int(x.rounded())).withThousands }
    if a >= 100 { return String(Int(x.rounded())) }
    if a >= 10 { return trimmed(x, 1) }
    if a >= 1 { return trimmed(x, 2) }
    if a >= 0.01 { return trimmed(x, 3) }
    return trimmed(x, 5)
}

private func trimmed(_ x: Double, _ decimals: Int) -> String {
    var p = 1.0
    for _ in 0..<decimals { p *= 10 }
    let r = (x * p).rounded() / p
    var s = "\(r)"
    if s.contains("."), !s.contains("e") {
        while s.hasSuffix("0") { s.removeLast() }
        if s.hasSuffix(".") { s.removeLast() }
    }
    return s
}

extension String {
    /// 1234567 -> "1 234 567" (thin grouping that reads the same in every locale).
    var withThousands: String {
        var out = ""
        for (i, c) in reversed().enumerated() {
            if i > 0 && i % 3 == 0 && c != "-" { out.append(" ") }
            out.append(c)
        }
        return String(out.reversed())
    }
}
