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
    /// Text pasted in bracketed-paste mode, line breaks as `\n`: one edit.
    case paste(String)
    /// A paste longer than the decoder keeps (`TerminalKeyDecoder.maxPasteBytes`): only
    /// its size is known, it is refused whole.
    case pasteTooLong(bytes: Int)
}

/// Turns the bytes a raw-mode terminal sends into keys: UTF-8 text, control keys and the
/// common ANSI/VT escape sequences. Pure; input may be split anywhere between reads, so
/// an incomplete sequence waits for the next bytes. Unknown sequences are dropped whole.
struct TerminalKeyDecoder {
    /// A pending escape sequence or UTF-8 character longer than this is garbage: dropped,
    /// so hostile input cannot make the buffer grow.
    static let maxPendingBytes = 64

    /// Most bytes of one paste kept: well above a message (64 KiB), so a too-long paste
    /// is still reported with its size; beyond it only the count goes on.
    static let maxPasteBytes = 1 << 20
    private static let pasteEnd: [UInt8] = [0x1B, 0x5B, 0x32, 0x30, 0x31, 0x7E]  // ESC [ 2 0 1 ~

    private var pending: [UInt8] = []
    /// Inside a bracketed paste: what was pasted so far.
    private var paste: PasteBuffer?

    private struct PasteBuffer {
        var bytes: [UInt8] = []
        var length = 0

        mutating func append(_ chunk: ArraySlice<UInt8>) {
            length += chunk.count
            let room = TerminalKeyDecoder.maxPasteBytes - bytes.count
            if room > 0 { bytes += chunk.prefix(room) }
        }

        /// Line breaks as `\n` (terminals send CR), other control bytes but tab dropped.
        var key: TerminalKey {
            guard length <= TerminalKeyDecoder.maxPasteBytes else { return .pasteTooLong(bytes: length) }
            var cleaned: [UInt8] = []
            cleaned.reserveCapacity(bytes.count)
            var previousCR = false
            for b in bytes {
                switch b {
                case 0x0D: cleaned.append(0x0A)
                case 0x0A where previousCR: break
                case 0x0A, 0x09: cleaned.append(b)
                case 0x00..<0x20, 0x7F: break
                default: cleaned.append(b)
                }
                previousCR = b == 0x0D
            }
            return .paste(String(decoding: cleaned, as: UTF8.self))
        }
    }

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
            if var p = paste {
                // Until ESC [ 201 ~, everything is pasted text.
                if let end = Self.find(Self.pasteEnd, in: pending, from: i) {
                    p.append(pending[i..<end])
                    i = end + Self.pasteEnd.count
                    paste = nil
                    emit(p.key)
                    continue
                }
                // Keep a possible start of the end marker for the next read.
                let keep = min(Self.pasteEnd.count - 1, pending.count - i)
                p.append(pending[i..<(pending.count - keep)])
                paste = p
                i = pending.count - keep
                break parsing
            }
            let b = pending[i]
            switch b {
            case 0x1B:
                switch Self.escapeSequence(pending, from: i) {
                case .incomplete: break parsing
                case let .complete(key, length):
                    if let key { emit(key) }
                    i += length
                    if Self.isPasteStart(pending, from: i - length, length: length) { paste = PasteBuffer() }
                }
            case 0x0D, 0x0A:
                emit(.enter)
                i += 1
            case 0x7F, 0x08:
                emit(.backspace)
                i += 1
            case 0x03:
                emit(.interrupt)
                i += 1
            case 0x04:
                emit(.endOfInput)
                i += 1
            case 0x15:
                emit(.eraseLine)
                i += 1
            case 0x17:
                emit(.eraseWord)
                i += 1
            case 0x0C:
                emit(.redraw)
                i += 1
            case 0x01:
                emit(.home)
                i += 1
            case 0x05:
                emit(.end)
                i += 1
            case 0x02:
                emit(.left)
                i += 1
            case 0x06:
                emit(.right)
                i += 1
            case 0x09:
                emit(.text(" "))
                i += 1
            case 0x00..<0x20: i += 1  // other control bytes mean nothing here
            default:
                let length = Self.utf8Length(lead: b)
                guard length > 0 else {
                    i += 1
                    continue
                }  // stray continuation or invalid byte
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

    private static func isPasteStart(_ b: [UInt8], from start: Int, length: Int) -> Bool {
        length == 6 && Array(b[start..<(start + 6)]) == [0x1B, 0x5B, 0x32, 0x30, 0x30, 0x7E]  // ESC [ 200 ~
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count - start >= needle.count else { return nil }
        for j in start...(haystack.count - needle.count) where haystack[j] == needle[0] {
            if Array(haystack[j..<(j + needle.count)]) == needle { return j }
        }
        return nil
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
