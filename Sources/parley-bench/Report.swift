import Foundation

/// The results of one run: printed as a Markdown table, written as JSON, and optionally
/// put into docs/BENCHMARKS.md between its markers.
struct Report: Codable {
    var tool = "parley-bench"
    var mode: String
    var command: String
    var date: String
    /// When the run began (`date` is when it ended).
    var started: String?
    /// The 1-minute load average sampled as each row group ended: other work on the
    /// machine moves the wall-clock rows, not the instruction counts.
    var loadAverages: [Double] = []
    var machine: Machine
    var rows: [BenchRow]

    static let beginMarker = "<!-- bench:begin -->"
    static let endMarker = "<!-- bench:end -->"

    func markdown() -> String {
        var out = "Measured \(started.map { "from \($0) to " } ?? "")\(date) with `\(command)` (\(mode) run)."
        if let low = loadAverages.min(), let high = loadAverages.max() {
            out +=
                " Load average (1 min) over the run \(fmt(low))–\(fmt(high)) on \(machine.cpus) CPUs"
                + (high > Double(machine.cpus)
                    ? ": other work shared the machine, so wall-clock rows are noisy; instruction counts (3i, 4i, 10i) are what compares between runs."
                    : ".")
        }
        out += "\n\n"
        out += "Machine: \(machine.cpus) CPUs, \(machine.cpuModel), \(machine.memoryMiB) MiB RAM, \(machine.kernel); "
        out += "daemon state on \(machine.stateFilesystem).\n\n"
        out += "| Row | Measure | Parley | Reference | Ratio | Goal | Result | Reference is |\n"
        out += "| --- | --- | ---: | ---: | ---: | --- | --- | --- |\n"
        for r in rows {
            let p = r.parley.map { fmt($0) + " " + r.unit } ?? "—"
            let ref = r.reference.map { fmt($0) + " " + r.unit } ?? "—"
            let ratio = r.ratio.map { fmt($0) + "×" } ?? "—"
            out +=
                "| \(r.id) | \(r.measure) | \(p) | \(ref) | \(ratio) | \(r.goal) | \(r.status.rawValue) | \(r.referenceName) |\n"
        }
        let notes = rows.filter { !$0.note.isEmpty }
        if !notes.isEmpty {
            out += "\nNotes:\n\n"
            for r in notes { out += "- \(r.id): \(r.note)\n" }
        }
        return out
    }

    func writeJSON(to path: String) throws {
        let enc = JSONEncoder()
        enc.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try enc.encode(self).write(to: URL(fileURLWithPath: path))
    }

    /// Replaces the text between the markers in `path` with this table.
    func updateDocument(at path: String) throws {
        let doc = try String(contentsOfFile: path, encoding: .utf8)
        guard let b = doc.range(of: Self.beginMarker), let e = doc.range(of: Self.endMarker),
            b.upperBound <= e.lowerBound
        else {
            throw BenchError.io("\(path) has no \(Self.beginMarker) … \(Self.endMarker) block")
        }
        let updated = doc[..<b.upperBound] + "\n" + markdown() + "\n" + doc[e.lowerBound...]
        try String(updated).write(toFile: path, atomically: true, encoding: .utf8)
    }
}
