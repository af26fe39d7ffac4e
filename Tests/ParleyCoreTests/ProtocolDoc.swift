import Foundation

/// Reads the examples embedded in docs/PROTOCOL.md, so tests fail when doc and code drift.
///
/// An example is the first fenced code block after a line `<!-- example:NAME -->`.
enum ProtocolDoc {
    static let url = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/PROTOCOL.md")

    struct Missing: Error, CustomStringConvertible {
        let name: String
        var description: String { "docs/PROTOCOL.md has no example named '\(name)'" }
    }

    /// The block's lines, joined with "\n".
    static func example(_ name: String) throws -> String {
        let text = try String(contentsOf: url, encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        guard let marker = lines.firstIndex(of: "<!-- example:\(name) -->"),
            let open = lines[marker...].firstIndex(where: { $0.hasPrefix("```") }),
            let close = lines[(open + 1)...].firstIndex(where: { $0.hasPrefix("```") })
        else { throw Missing(name: name) }
        return lines[(open + 1)..<close].joined(separator: "\n")
    }

    /// The block as hex with all whitespace removed.
    static func hexExample(_ name: String) throws -> String {
        try example(name).filter { !$0.isWhitespace }
    }
}
