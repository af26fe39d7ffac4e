#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The parsed contents of parleyd.toml: `key = value` entries in file order, each with
/// its line number so later checks can point at the line.
///
/// Syntax is a strict TOML subset (see `ConfigLineParser`); an optional `[parleyd]`
/// header may come first. Whether keys and values make sense is checked by
/// `apply(to:)`, which also catches unknown keys.
public struct ConfigFile: Equatable, Sendable {
    public struct Entry: Equatable, Sendable {
        public let key: String
        public let value: ConfigValue
        public let line: Int
    }

    /// The only table header allowed, so the file can later grow sections for other tools.
    public static let tableName = "parleyd"
    /// The file is a dozen short options; 64 KiB is generous and keeps a wrong path
    /// (a log, a binary) from being read into memory.
    public static let maxFileBytes = 64 * 1024
    /// Most lines one statement (a multi-line array) may span: far more than any peer
    /// list, and it bounds the re-parsing of a statement as its lines are added.
    public static let maxStatementLines = 256
    /// Longest line: fits any real notify_command or peer list, bounds per-line work.
    public static let maxLineBytes = 4096
    /// File name used in messages when the text did not come from a named file.
    public static let defaultFileName = "parleyd.toml"

    /// Name used in error messages (the path, when loaded from disk).
    public let fileName: String
    public let entries: [Entry]

    public init(fileName: String = defaultFileName, entries: [Entry]) {
        self.fileName = fileName
        self.entries = entries
    }

    public subscript(key: String) -> Entry? { entries.first { $0.key == key } }

    /// Parses the text of a config file. Never traps: every malformed input is a `ConfigError`.
    public static func parse(_ text: String, fileName: String = defaultFileName) throws(ConfigError) -> ConfigFile {
        let utf8 = Array(text.utf8)
        guard utf8.count <= maxFileBytes else { throw .fileTooLarge(file: fileName, limit: maxFileBytes) }

        var entries: [Entry] = []
        var firstLineOfKey: [String: Int] = [:]
        var sawHeader = false
        var lines: [[UInt8]] = []
        for (i, rawLine) in utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            var line = rawLine
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }  // CRLF files
            guard line.count <= maxLineBytes else {
                throw .lineTooLong(ConfigLocation(file: fileName, line: i + 1), limit: maxLineBytes)
            }
            lines.append(Array(line))
        }
        var next = 0
        while next < lines.count {
            let lineNumber = next + 1
            let location = ConfigLocation(file: fileName, line: lineNumber)
            // A statement is one line, or more while an array is still open (TOML allows
            // arrays over several lines); the parser is given the lines joined.
            var statement = lines[next]
            next += 1
            var parsed: ConfigLineParser.Statement
            while true {
                var parser = ConfigLineParser(line: statement, location: location)
                do {
                    parsed = try parser.parse()
                    break
                } catch {
                    guard parser.needsMoreLines, next < lines.count else { throw error }
                    // Each added line parses the statement again: bounded, so an array
                    // never closed cannot make loading quadratic in the file size.
                    guard next - lineNumber < maxStatementLines else {
                        throw .syntax(location, "an array longer than \(maxStatementLines) lines (is a ']' missing?)")
                    }
                    statement += [UInt8(ascii: "\n")] + lines[next]
                    next += 1
                }
            }
            switch parsed {
            case .empty:
                continue
            case .table(let name):
                guard name == tableName else { throw .tableNotAllowed(location, name: name) }
                // In TOML, keys before a header belong to another (the root) table;
                // accepting them as [parleyd] keys would read the file differently.
                guard !sawHeader else {
                    throw .syntax(location, "[\(tableName)] appears twice")
                }
                guard entries.isEmpty else {
                    throw .syntax(location, "[\(tableName)] must come before any key")
                }
                sawHeader = true
            case .keyValue(let key, let value):
                if let first = firstLineOfKey[key] {
                    throw .duplicateKey(location, key: key, firstLine: first)
                }
                firstLineOfKey[key] = lineNumber
                entries.append(Entry(key: key, value: value, line: lineNumber))
            }
        }
        return ConfigFile(fileName: fileName, entries: entries)
    }

    /// Reads and parses the file at `path`. Reads at most `maxFileBytes + 1` bytes, so a
    /// huge or endless file (a FIFO, /dev/zero) is refused without being slurped.
    public static func load(path: String) throws(ConfigError) -> ConfigFile {
        let bytes = try readBounded(path: path)
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .notUTF8(file: path) }
        return try parse(text, fileName: path)
    }

    /// Like `load(path:)`, but a missing file is not an error: parleyd runs on defaults
    /// when the default config file does not exist.
    public static func loadIfPresent(path: String) throws(ConfigError) -> ConfigFile? {
        if access(path, F_OK) != 0 && errno == ENOENT { return nil }
        return try load(path: path)
    }

    /// Where parleyd looks for its config file when not told: systemd's
    /// $CONFIGURATION_DIRECTORY (/etc/parley for the packaged unit), else
    /// $XDG_CONFIG_HOME/parley, else ~/.config/parley.
    public static func defaultPath(environment: [String: String], homeDirectory: String?) -> String? {
        let fileName = "parleyd.toml"
        if let directory = DaemonConfiguration.firstAbsolutePath(in: environment["CONFIGURATION_DIRECTORY"]) {
            return directory + "/" + fileName
        }
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return config + "/parley/" + fileName
        }
        guard let home = homeDirectory, home.hasPrefix("/") else { return nil }
        return home + "/.config/parley/" + fileName
    }

    private static func readBounded(path: String) throws(ConfigError) -> [UInt8] {
        // O_NONBLOCK so a FIFO at the path cannot hang us in open(); fstat then refuses it.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .unreadable(path: path, reason: "not a regular file") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while bytes.count <= maxFileBytes {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable(path: path, reason: String(cString: strerror(errno)))
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
        }
        throw .fileTooLarge(file: path, limit: maxFileBytes)
    }
}
