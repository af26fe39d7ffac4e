import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `parley send bob --attach reprot.pdf "caption"`: a send with attachments is one thing,
/// so every file is checked before anything is sent: it exists, is a regular file and opens
/// for reading. A typo gets the closest name in the same directory as a suggestion.
enum AttachmentCheck {
    /// Directories larger than this are not listed for a suggestion (bounded work).
    static let maxEntriesForSuggestion = 4_096

    /// What is wrong with each file that cannot be sent, in the order given; empty when
    /// all can be. `paths` are absolute.
    static func problems(_ paths: [String]) -> [String] {
        paths.compactMap(problem)
    }

    /// Why `path` (absolute) cannot be attached, or nil.
    static func problem(_ path: String) -> String? {
        let shown = Terminal.line(path)
        var st = stat()
        guard stat(path, &st) == 0 else {
            let reason = String(cString: strerror(errno))
            var text = "\(shown): \(reason)"
            if errno == ENOENT, let close = suggestion(for: path) {
                text += " (did you mean \(Terminal.line(close))?)"
            }
            return text
        }
        if (st.st_mode & S_IFMT) == S_IFDIR { return "\(shown): is a directory (attach the files in it)" }
        guard (st.st_mode & S_IFMT) == S_IFREG else { return "\(shown): not a regular file" }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return "\(shown): cannot be opened: \(String(cString: strerror(errno)))" }
        close(fd)
        return nil
    }

    /// The name of an existing file in the same directory close to `path`'s name.
    static func suggestion(for path: String) -> String? {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory),
            entries.count <= maxEntriesForSuggestion,
            let close = CommandSuggestion.suggest(name, among: entries)
        else { return nil }
        return close
    }
}
