import Foundation
import ParleyControlProtocol

/// Where `parley send` takes its text from: the argument, standard input (`-`, or no
/// argument on a pipe) or a file. Reading is bounded: a message is at most 64 KiB, so
/// anything beyond the control line limit is refused before it is all in memory.
enum MessageText {
    static let standardInputMarker = "-"
    /// More than any valid body: the daemon gives the exact limit in its error.
    static let maxReadBytes = ControlLimits.maxLineBytes

    enum Failure: Error, CustomStringConvertible {
        case unreadable(String, reason: String)
        case tooLarge(String)
        case notUTF8(String)
        case empty(String)

        var description: String {
            switch self {
            case .unreadable(let source, let reason): return "cannot read \(source): \(reason)"
            case .tooLarge(let source):
                return
                    "\(source) is larger than \(MessageText.maxReadBytes) bytes; a message is at most 64 KiB: send it in parts"
            case .notUTF8(let source): return "\(source) is not UTF-8 text"
            case .empty(let source): return "\(source) is empty: nothing to send"
            }
        }
    }

    static func resolve(argument: String?, file: String?) throws(Failure) -> String {
        if let file {
            guard let handle = FileHandle(forReadingAtPath: file) else {
                throw .unreadable(file, reason: String(cString: strerror(errno)))
            }
            defer { try? handle.close() }
            return try text(readBounded(handle, source: file), source: file)
        }
        if let argument, argument != standardInputMarker { return argument }
        return try text(readBounded(FileHandle.standardInput, source: "standard input"), source: "standard input")
    }

    static func readBounded(_ handle: FileHandle, source: String) throws(Failure) -> Data {
        var data = Data()
        while true {
            let chunk: Data?
            do { chunk = try handle.read(upToCount: 65_536) } catch {
                throw .unreadable(source, reason: "\(error.localizedDescription)")
            }
            guard let chunk, !chunk.isEmpty else { return data }
            data.append(chunk)
            if data.count > maxReadBytes { throw .tooLarge(source) }
        }
    }

    /// The text of `data`: UTF-8, one final newline dropped (`echo` and editors add it).
    static func text(_ data: Data, source: String) throws(Failure) -> String {
        guard var text = String(data: data, encoding: .utf8) else { throw .notUTF8(source) }
        if text.hasSuffix("\r\n") { text.removeLast() } else if text.hasSuffix("\n") { text.removeLast() }
        guard !text.isEmpty else { throw .empty(source) }
        return text
    }
}
