/// Lays the chat view out as terminal rows. Pure: the terminal size, the entries and the
/// prompt go in, the text of every row and the cursor position come out.
///
/// ```
/// rows 0 ..< h-2   messages, newest at the bottom (wrapped to the width)
/// row  h-2         status line (reverse video)
/// row  h-1         "> " and the text being typed
/// ```
enum ChatLayout {
    static let prompt = "> "
    /// Continuation lines of a wrapped message are indented under its text, but never
    /// by more than this share of the width (long names would leave no room).
    static let maxIndentFraction = 3
    /// Below this size there is no room for messages: only the prompt is drawn.
    static let minimumRows = 3
    static let minimumColumns = 8

    struct Screen: Equatable {
        var rows: [String]
        /// Zero-based row and column of the cursor.
        var cursorRow: Int
        var cursorColumn: Int
    }

    /// The wrapped lines of one entry, each at most `width` columns: `[3] 12:00 bob: hi`,
    /// the number being what /reply, /react, /edit and /delete take. With `colour`, an
    /// incoming sender's name is drawn in its key's colour (`NameColour`); the escape
    /// codes take no columns.
    static func lines(_ entry: ChatEntry, width: Int, time: (Int) -> String, colour: Bool = false) -> [String] {
        let stamp = (entry.number.map { "[\($0)] " } ?? "") + time(entry.time)
        let head: String
        var name: String?
        switch entry.kind {
        case .incoming(let from):
            name = Terminal.line(from)
            head = "\(stamp) \(Terminal.line(from)): "
        case .outgoing: head = "\(stamp) you: "
        case .notice: head = "\(stamp) * "
        }
        var body = Terminal.multiline(entry.body).replacingOccurrences(of: "\t", with: "    ")
        if let mark = entry.mark { body += " " + mark.rawValue }
        if entry.mark == .partial, let holders = entry.holders, !holders.isEmpty { body += " " + holders }
        let indent = min(DisplayWidth.of(head), max(width / maxIndentFraction, 1))
        var lines = wrap(head + body, width: width, indent: indent)
        if colour, let name, let key = entry.senderKey, let first = lines.first,
            first.hasPrefix(stamp + " " + name + ":")
        {
            let rest = first.dropFirst(stamp.count + 1 + name.count)
            lines[0] = stamp + " " + NameColour.start(forKey: key) + name + NameColour.reset + rest
        }
        return lines
    }

    /// Word-wraps `text` into lines of at most `width` columns; hard line breaks are kept,
    /// words longer than a line are cut, continuation lines start with `indent` spaces.
    static func wrap(_ text: String, width: Int, indent: Int) -> [String] {
        guard width > 0 else { return [] }
        let pad = String(repeating: " ", count: max(0, min(indent, width - 1)))
        var out: [String] = []
        for (index, paragraph) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = index == 0 ? "" : pad
            var used = DisplayWidth.of(line)
            var lineHasText = false
            func breakLine() {
                out.append(line)
                line = pad
                used = DisplayWidth.of(pad)
                lineHasText = false
            }
            for word in words(String(paragraph)) {
                let w = DisplayWidth.of(word)
                if used + w <= width {
                    line += word
                    used += w
                    lineHasText = true
                    continue
                }
                if word.allSatisfy({ $0 == " " }) {
                    breakLine()  // spaces at a line break are dropped
                    continue
                }
                if lineHasText && DisplayWidth.of(pad) + w <= width {
                    breakLine()
                    line += word
                    used += w
                    lineHasText = true
                    continue
                }
                for c in word {
                    let cw = DisplayWidth.of(c)
                    if used + cw > width { breakLine() }
                    line.append(c)
                    used += cw
                    lineHasText = true
                }
            }
            out.append(line)
        }
        return out
    }

    /// Runs of non-spaces and runs of spaces, in order.
    static func words(_ text: String) -> [String] {
        var result: [String] = []
        var current = ""
        var currentIsSpace = false
        for c in text {
            let isSpace = c == " "
            if !current.isEmpty && isSpace != currentIsSpace {
                result.append(current)
                current = ""
            }
            current.append(c)
            currentIsSpace = isSpace
        }
        if !current.isEmpty { result.append(current) }
        return result
    }

    /// The whole screen. `scroll` is how many message lines the view is moved up from the
    /// bottom (Page Up); it is clamped, and the clamped value is what the caller keeps.
    static func screen(
        lines: [String], status: String, editor: LineEditor, width: Int, height: Int,
        scroll: inout Int
    ) -> Screen {
        let input = editor.visible(width: max(width - DisplayWidth.of(prompt), 1))
        let promptRow = prompt + input.text
        guard height >= minimumRows, width >= minimumColumns else {
            scroll = 0
            return Screen(rows: [promptRow], cursorRow: 0, cursorColumn: DisplayWidth.of(prompt) + input.cursorColumn)
        }
        let area = height - 2
        scroll = max(0, min(scroll, lines.count - area))
        let end = lines.count - scroll
        let visible = Array(lines[max(0, end - area)..<end])
        var rows = Array(repeating: "", count: area - visible.count) + visible
        var statusText = status
        if scroll > 0 { statusText += " · ↓ \(scroll) more lines below (PgDn)" }
        let fitted = DisplayWidth.prefix(" " + statusText, fitting: width)
        rows.append(fitted + String(repeating: " ", count: max(0, width - DisplayWidth.of(fitted))))
        rows.append(promptRow)
        return Screen(rows: rows, cursorRow: height - 1, cursorColumn: DisplayWidth.of(prompt) + input.cursorColumn)
    }
}
