#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How log lines look.
public enum LogFormat: Sendable {
    /// For stderr captured by journald: "<6>message key=value". journald reads the
    /// "<N>" syslog priority prefix and adds its own timestamp.
    case journald
    /// For a terminal or a file: "2026-11-22T18:00:00.123Z info  message key=value".
    case human

    /// journald format when our stderr is the journal stream systemd told us about in
    /// $JOURNAL_STREAM ("device:inode"), human format otherwise.
    public static func forStandardError(environment: [String: String]) -> LogFormat {
        forStandardError(journalStream: environment["JOURNAL_STREAM"], standardError: standardErrorIdentity())
    }

    /// The format for a $JOURNAL_STREAM value, given stderr's (device, inode).
    /// The variable is inherited by children whose stderr may point elsewhere, so
    /// systemd.exec(5) advises comparing it with stderr itself; when stderr cannot be
    /// inspected, its presence alone decides.
    public static func forStandardError(
        journalStream: String?,
        standardError: (device: UInt64, inode: UInt64)?
    ) -> LogFormat {
        guard let journalStream, !journalStream.isEmpty else { return .human }
        guard let standardError else { return .journald }
        let parts = journalStream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return .human }
        return device == standardError.device && inode == standardError.inode ? .journald : .human
    }

    /// (st_dev, st_ino) of file descriptor 2, or nil if it cannot be inspected.
    static func standardErrorIdentity() -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }
}
