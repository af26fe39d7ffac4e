#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The controlling terminal in raw mode for `parley chat`: no echo, no line buffering,
/// Ctrl-C arrives as a byte; the alternate screen, so the shell's screen comes back on
/// exit. Everything is undone by `restore()`, and by a handler for the signals that
/// would otherwise leave the terminal raw.
final class RawTerminal {
    /// Size used when the terminal does not report one.
    static let fallbackSize = (width: 80, height: 24)

    static let enterAlternateScreen = "\u{1B}[?1049h"
    static let leaveAlternateScreen = "\u{1B}[?1049l"
    static let hideCursor = "\u{1B}[?25l"
    /// Bracketed paste: the terminal marks pasted text, so a paste is one edit (refused
    /// whole when too long, its line breaks kept) rather than keystrokes and Enters.
    static let enableBracketedPaste = "\u{1B}[?2004h"
    static let disableBracketedPaste = "\u{1B}[?2004l"
    static let showCursor = "\u{1B}[?25h"
    static let clearToEndOfLine = "\u{1B}[K"
    static let reverseVideo = "\u{1B}[7m"
    static let resetAttributes = "\u{1B}[0m"

    private var restored = false

    enum Failure: Error, CustomStringConvertible {
        case notATerminal
        case termios(Int32)
        var description: String {
            switch self {
            case .notATerminal: return "parley chat needs a terminal (stdin and stdout must be a tty)"
            case .termios(let code): return "cannot set the terminal to raw mode: \(String(cString: strerror(code)))"
            }
        }
    }

    init() throws(Failure) {
        guard isatty(0) == 1, isatty(1) == 1 else { throw .notATerminal }
        var original = termios()
        guard tcgetattr(0, &original) == 0 else { throw .termios(errno) }
        savedTerminalState = original
        var raw = original
        cfmakeraw(&raw)
        guard tcsetattr(0, TCSAFLUSH, &raw) == 0 else { throw .termios(errno) }
        terminalIsRaw = true
        // Restore the terminal on the signals that end the process (the terminal going away
        // needs no restoring, but the alternate screen of a still-open one does).
        for s in [SIGTERM, SIGINT, SIGQUIT, SIGHUP] {
            signal(s) { _ in
                restoreTerminalFromSignal()
                _exit(1)
            }
        }
        // A window size change must interrupt poll(2); the handler itself does nothing.
        signal(SIGWINCH) { _ in }
        RawTerminal.write(Self.enterAlternateScreen + Self.enableBracketedPaste)
    }

    deinit { restore() }

    func restore() {
        guard !restored else { return }
        restored = true
        RawTerminal.write(
            Self.resetAttributes + Self.showCursor + Self.disableBracketedPaste + Self.leaveAlternateScreen)
        var original = savedTerminalState
        _ = tcsetattr(0, TCSAFLUSH, &original)
        terminalIsRaw = false
        signal(SIGWINCH, SIG_DFL)
    }

    /// Columns and rows now.
    static func size() -> (width: Int, height: Int) {
        var w = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &w) == 0, w.ws_col > 0, w.ws_row > 0 else { return fallbackSize }
        return (Int(w.ws_col), Int(w.ws_row))
    }

    /// Draws a screen in one write: every row rewritten in place (no clearing, so no flicker).
    func draw(_ screen: ChatLayout.Screen, statusRow: Int?) {
        var out = Self.hideCursor
        for (i, row) in screen.rows.enumerated() {
            out += "\u{1B}[\(i + 1);1H"
            if i == statusRow {
                out += Self.reverseVideo + row + Self.resetAttributes
            } else {
                out += row + Self.clearToEndOfLine
            }
        }
        out += "\u{1B}[\(screen.cursorRow + 1);\(screen.cursorColumn + 1)H" + Self.showCursor
        RawTerminal.write(out)
    }

    static func write(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            // Force-unwrap safe: the loop runs only while bytes is non-empty.
            let n = bytes.withUnsafeBytes { raw in Glibc.write(1, raw.baseAddress! + offset, raw.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += n
        }
    }
}

// Signal handlers cannot capture context: the state they restore lives in globals,
// written only on the main thread before the handlers are installed.
nonisolated(unsafe) private var savedTerminalState = termios()
nonisolated(unsafe) private var terminalIsRaw = false

/// Async-signal-safe: write(2) and tcsetattr(3) only.
private func restoreTerminalFromSignal() {
    guard terminalIsRaw else { return }
    let leave: StaticString = "\u{1B}[0m\u{1B}[?25h\u{1B}[?2004l\u{1B}[?1049l"
    _ = Glibc.write(1, leave.utf8Start, leave.utf8CodeUnitCount)
    _ = tcsetattr(0, TCSAFLUSH, &savedTerminalState)
}
