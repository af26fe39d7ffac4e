/// The prompt line of `parley chat`: text and a cursor, edited by keys. Pure.
struct LineEditor {
    /// The daemon's message body limit (64 KiB of UTF-8): typing stops there.
    static let maxBytes = 65_536

    private(set) var characters: [Character] = []
    /// Index into `characters` of the insertion point.
    private(set) var cursor = 0

    var text: String { String(characters) }
    var isEmpty: Bool { characters.isEmpty }

    enum Outcome: Equatable {
        case edited
        /// Enter on a line that is not blank: the text to send (the line is kept until
        /// the caller clears it, so a failed send loses nothing).
        case submit(String)
        case ignored
    }

    mutating func apply(_ key: TerminalKey) -> Outcome {
        switch key {
        case .text(let t): return insert(t) ? .edited : .ignored
        case .enter:
            return text.allSatisfy(\.isWhitespace) ? .ignored : .submit(text)
        case .backspace:
            guard cursor > 0 else { return .ignored }
            characters.remove(at: cursor - 1)
            cursor -= 1
        case .delete:
            guard cursor < characters.count else { return .ignored }
            characters.remove(at: cursor)
        case .left: guard cursor > 0 else { return .ignored }; cursor -= 1
        case .right: guard cursor < characters.count else { return .ignored }; cursor += 1
        case .home: cursor = 0
        case .end: cursor = characters.count
        case .eraseLine: clear()
        case .eraseWord:
            var start = cursor
            while start > 0, characters[start - 1].isWhitespace { start -= 1 }
            while start > 0, !characters[start - 1].isWhitespace { start -= 1 }
            characters.removeSubrange(start..<cursor)
            cursor = start
        case .up, .down, .pageUp, .pageDown, .interrupt, .endOfInput, .redraw:
            return .ignored
        }
        return .edited
    }

    mutating func clear() {
        characters.removeAll()
        cursor = 0
    }

    /// Inserts what fits under `maxBytes`; false if nothing did.
    private mutating func insert(_ t: String) -> Bool {
        var budget = Self.maxBytes - text.utf8.count
        var added: [Character] = []
        for c in t {
            let n = c.utf8.count
            guard n <= budget else { break }
            budget -= n
            added.append(c)
        }
        guard !added.isEmpty else { return false }
        characters.insert(contentsOf: added, at: cursor)
        cursor += added.count
        return true
    }

    /// What to draw after a prompt in `width` columns: a window of the text that keeps
    /// the cursor visible, and the cursor's column within it.
    func visible(width: Int) -> (text: String, cursorColumn: Int) {
        guard width > 1 else { return ("", 0) }
        // Scroll so the cursor sits at most width-1 columns in (room to draw it at the end).
        var start = 0
        var widthBeforeCursor = characters[0..<cursor].reduce(0) { $0 + DisplayWidth.of($1) }
        while widthBeforeCursor > width - 1, start < cursor {
            widthBeforeCursor -= DisplayWidth.of(characters[start])
            start += 1
        }
        var shown = ""
        var used = 0
        for c in characters[start...] {
            let w = DisplayWidth.of(c)
            if used + w > width { break }
            used += w
            shown.append(c)
        }
        return (shown, widthBeforeCursor)
    }
}
