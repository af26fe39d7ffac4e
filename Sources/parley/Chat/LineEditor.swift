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
        /// Text that would take the line over `maxBytes`: nothing of it was inserted (a
        /// paste cut silently would send half a message). `bytes` is the line it would make.
        case refused(bytes: Int)
        /// Enter on a line that is not blank: the text to send (the line is kept until
        /// the caller clears it, so a failed send loses nothing).
        case submit(String)
        case ignored
    }

    mutating func apply(_ key: TerminalKey) -> Outcome {
        switch key {
        case .pasteTooLong(let bytes):
            return .refused(bytes: text.utf8.count + bytes)
        case .text(let t), .paste(let t):
            let total = text.utf8.count + t.utf8.count
            guard total <= Self.maxBytes else { return .refused(bytes: total) }
            characters.insert(contentsOf: t, at: cursor)
            cursor += t.count
        case .enter:
            // A blank line sends nothing, and leaves no invisible spaces behind either.
            guard !text.allSatisfy(\.isWhitespace) else {
                if isEmpty { return .ignored }
                clear()
                return .edited
            }
            return .submit(text)
        case .backspace:
            guard cursor > 0 else { return .ignored }
            characters.remove(at: cursor - 1)
            cursor -= 1
        case .delete:
            guard cursor < characters.count else { return .ignored }
            characters.remove(at: cursor)
        case .left:
            guard cursor > 0 else { return .ignored }
            cursor -= 1
        case .right:
            guard cursor < characters.count else { return .ignored }
            cursor += 1
        case .home: cursor = 0
        case .end: cursor = characters.count
        case .eraseLine: clear()
        case .eraseWord:
            var start = cursor
            while start > 0, characters[start - 1].isWhitespace { start -= 1 }
            while start > 0, !characters[start - 1].isWhitespace { start -= 1 }
            characters.removeSubrange(start..<cursor)
            cursor = start
        case .wordLeft:
            guard cursor > 0 else { return .ignored }
            while cursor > 0, !Self.isWordCharacter(characters[cursor - 1]) { cursor -= 1 }
            while cursor > 0, Self.isWordCharacter(characters[cursor - 1]) { cursor -= 1 }
        case .wordRight:
            guard cursor < characters.count else { return .ignored }
            while cursor < characters.count, !Self.isWordCharacter(characters[cursor]) { cursor += 1 }
            while cursor < characters.count, Self.isWordCharacter(characters[cursor]) { cursor += 1 }
        case .up, .down, .pageUp, .pageDown, .interrupt, .endOfInput, .redraw:
            return .ignored
        }
        return .edited
    }

    mutating func clear() {
        characters.removeAll()
        cursor = 0
    }

    /// Replaces the whole line (a recalled line), cursor at its end.
    mutating func replace(with text: String) {
        characters = Array(text)
        cursor = characters.count
    }

    /// Letters and digits make words for Alt-b / Alt-f, as in readline.
    static func isWordCharacter(_ c: Character) -> Bool { c.isLetter || c.isNumber }

    /// What to draw after a prompt in `width` columns: a window of the text that keeps
    /// the cursor visible, and the cursor's column within it.
    func visible(width: Int) -> (text: String, cursorColumn: Int) {
        guard width > 1 else { return ("", 0) }
        // Scroll so the cursor sits at most width-1 columns in (room to draw it at the end).
        var start = 0
        // A pasted line break is drawn as ↵: the prompt stays one row.
        let drawn = characters.map { $0 == "\n" ? "↵" : $0 }
        var widthBeforeCursor = drawn[0..<cursor].reduce(0) { $0 + DisplayWidth.of($1) }
        while widthBeforeCursor > width - 1, start < cursor {
            widthBeforeCursor -= DisplayWidth.of(drawn[start])
            start += 1
        }
        var shown = ""
        var used = 0
        for c in drawn[start...] {
            let w = DisplayWidth.of(c)
            if used + w > width { break }
            used += w
            shown.append(c)
        }
        return (shown, widthBeforeCursor)
    }
}
