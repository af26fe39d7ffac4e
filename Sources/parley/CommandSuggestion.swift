/// "Did you mean": the subcommand closest to what was typed, by edit distance. Pure.
enum CommandSuggestion {
    /// Farther than this is a different word, not a typo.
    static let maxDistance = 2

    static func suggest(_ typed: String, among names: [String]) -> String? {
        let typed = typed.lowercased()
        let scored = names.map { (name: $0, distance: distance(typed, $0)) }
        guard let best = scored.min(by: { $0.distance < $1.distance }) else { return nil }
        // A prefix of a single command is a typo too (`parley rea`).
        if best.distance > maxDistance {
            let prefixed = names.filter { $0.hasPrefix(typed) }
            return typed.count >= 2 && prefixed.count == 1 ? prefixed[0] : nil
        }
        return best.name
    }

    /// Damerau-Levenshtein distance (optimal string alignment): swapped letters count once.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }
}
