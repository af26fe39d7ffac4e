/// A key (or pasted text) read from a terminal in raw mode.
enum TerminalKey: Equatable {
    /// Printable characters, consecutive ones together.
    case text(String)
    case enter, backspace, delete, left, right, home, end, up, down, pageUp, pageDown
    /// Alt-b / Ctrl-Left, Alt-f / Ctrl-Right: a word back or forward (readline's habit).
    case wordLeft, wordRight
    /// Ctrl-C.
    case interrupt
    /// Ctrl-D.
    case endOfInput
    /// Ctrl-U: erase the line.
    case eraseLine
    /// Ctrl-W: erase the word before the cursor.
    case eraseWord
    /// Ctrl-L.
    case redraw
}

/// Turns the bytes a raw-mode terminal sends into keys: UTF-8 text, control keys and the
/// common ANSI/VT escape sequences. Pure; input may be split anywhere between reads, so
/// an incomplete sequence waits for the next bytes. Unknown sequences are dropped whole.
struct TerminalKeyDecoder {
    /// A pending escape sequence or UTF-8 character longer than this is garbage: dropped,
    /// so hostile input cannot make the buffer grow.
    static let maxPendingBytes = 64

    private var pending: [UInt8] = []

    mutating func feed(_ bytes: [UInt8]) -> [TerminalKey] {
        pending += bytes
        var keys: [TerminalKey] = []
        var i = 0
        func emit(_ key: TerminalKey) {
            if case .text(let t) = key, case .text(let previous)? = keys.last {
                keys[keys.count - 1] = .text(previous + t)
            } else {
                keys.append(key)
            }
        }
        parsing: while i < pending.count {
            let b = pending[i]
            switch b {
            case 0x1B:
                switch Self.escapeSequence(pending, from: i) {
                case .incomplete: break parsing
                case let .complete(key, length):
                    if let key { emit(key) }
                    i += length
                }
            case 0x0D, 0x0A: emit(.enter); i += 1
            case 0x7F, 0x08: emit(.backspace); i += 1
            case 0x03: emit(.interrupt); i += 1
            case 0x04: emit(.endOfInput); i += 1
            case 0x15: emit(.eraseLine); i += 1
            case 0x17: emit(.eraseWord); i += 1
            case 0x0C: emit(.redraw); i += 1
            case 0x01: emit(.home); i += 1
            case 0x05: emit(.end); i += 1
            case 0x02: emit(.left); i += 1
            case 0x06: emit(.right); i += 1
            case 0x09: emit(.text(" ")); i += 1
            case 0x00..<0x20: i += 1  // other control bytes mean nothing here
            default:
                let length = Self.utf8Length(lead: b)
                guard length > 0 else { i += 1; continue }  // stray continuation or invalid byte
                guard i + length <= pending.count else { break parsing }
                if let s = String(validating: pending[i..<(i + length)], as: UTF8.self) {
                    emit(.text(s))
                }
                i += length
            }
        }
        pending.removeFirst(i)
        if pending.count > Self.maxPendingBytes { pending.removeAll() }
        return keys
    }

    private enum Escape {
        case incomplete
        /// `key` nil: a sequence that means nothing here, skipped.
        case complete(TerminalKey?, length: Int)
    }

    private static func escapeSequence(_ b: [UInt8], from start: Int) -> Escape {
        guard start + 1 < b.count else { return .incomplete }
        switch b[start + 1] {
        case UInt8(ascii: "["):
            // CSI: parameter bytes 0x30-0x3F, intermediate bytes 0x20-0x2F, one final byte 0x40-0x7E.
            var j = start + 2
            while j < b.count, (0x20...0x3F).contains(b[j]) { j += 1 }
            guard j < b.count else { return .incomplete }
            guard (0x40...0x7E).contains(b[j]) else { return .complete(nil, length: j - start) }
            let parameters = String(decoding: b[(start + 2)..<j], as: UTF8.self)
            return .complete(csiKey(final: b[j], parameters: parameters), length: j - start + 1)
        case UInt8(ascii: "O"):
            guard start + 2 < b.count else { return .incomplete }
            return .complete(ss3Key(b[start + 2]), length: 3)
        case UInt8(ascii: "b"): return .complete(.wordLeft, length: 2)
        case UInt8(ascii: "f"): return .complete(.wordRight, length: 2)
        default:
            // Alt+key or a lone Escape followed by a key: the Escape is dropped.
            return .complete(nil, length: 1)
        }
    }

    private static func csiKey(final: UInt8, parameters: String) -> TerminalKey? {
        switch final {
        case UInt8(ascii: "A"): return .up
        case UInt8(ascii: "B"): return .down
        // `1;5C` is Ctrl-Right and `1;3C` Alt-Right in xterm's encoding: word moves.
        case UInt8(ascii: "C"): return parameters.hasSuffix(";5") || parameters.hasSuffix(";3") ? .wordRight : .right
        case UInt8(ascii: "D"): return parameters.hasSuffix(";5") || parameters.hasSuffix(";3") ? .wordLeft : .left
        case UInt8(ascii: "H"): return .home
        case UInt8(ascii: "F"): return .end
        case UInt8(ascii: "~"):
            switch parameters.split(separator: ";").first {
            case "1", "7": return .home
            case "4", "8": return .end
            case "3": return .delete
            case "5": return .pageUp
            case "6": return .pageDown
            default: return nil  // includes bracketed-paste markers 200~ / 201~
            }
        default: return nil
        }
    }

    private static func ss3Key(_ b: UInt8) -> TerminalKey? {
        switch b {
        case UInt8(ascii: "A"): return .up
        case UInt8(ascii: "B"): return .down
        case UInt8(ascii: "C"): return .right
        case UInt8(ascii: "D"): return .left
        case UInt8(ascii: "H"): return .home
        case UInt8(ascii: "F"): return .end
        default: return nil
        }
    }

    /// Bytes in the UTF-8 sequence that `lead` starts; 0 if it cannot start one.
    private static func utf8Length(lead: UInt8) -> Int {
        switch lead {
        case 0x20..<0x80: return 1
        case 0xC2..<0xE0: return 2
        case 0xE0..<0xF0: return 3
        case 0xF0..<0xF5: return 4
        default: return 0
        }
    }
}
