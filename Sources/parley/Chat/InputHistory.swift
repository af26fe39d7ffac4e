/// The lines sent in this chat, for Up / Down recall as in a shell. Pure. Up from the line
/// being typed saves it as a draft, so Down past the newest sent line gives it back.
struct InputHistory {
    /// Lines remembered: a chat left open for days must not grow without end.
    static let maxLines = 500

    private(set) var lines: [String] = []
    /// Index into `lines` of the line shown; nil while editing the draft.
    private var position: Int?
    private var draft = ""

    /// A line was sent: remember it (not twice in a row) and go back to a fresh draft.
    mutating func sent(_ line: String) {
        if lines.last != line { lines.append(line) }
        if lines.count > Self.maxLines { lines.removeFirst(lines.count - Self.maxLines) }
        position = nil
        draft = ""
    }

    /// Up: the previous sent line, or nil when there is none older (the line stays).
    mutating func older(current: String) -> String? {
        guard !lines.isEmpty else { return nil }
        switch position {
        case nil:
            draft = current
            position = lines.count - 1
        case let p? where p > 0:
            position = p - 1
        default:
            return nil
        }
        return lines[position!]
    }

    /// Down: the next sent line, the draft after the newest, nil when already at the draft.
    mutating func newer() -> String? {
        guard let p = position else { return nil }
        if p + 1 < lines.count {
            position = p + 1
            return lines[p + 1]
        }
        position = nil
        return draft
    }
}
