/// Where the daemon looks for a completed incoming file it hands to a client (`files.open`).
///
/// The store records the absolute path a file was saved at. A state directory moved to
/// another place (README "Several people on one host": the system service's
/// `/var/lib/parley` copied to `/var/lib/parley-user/NAME` and given to the person) keeps
/// its files under the same names in the new download directory, while the records still
/// name the old place, which the person's instance may not open (the old directory is the
/// `parley` user's, 0700) or which is gone. So: the recorded path first (it is where the
/// daemon itself wrote the file), then, when that is not in the current download directory,
/// the same file name inside the current download directory. Never a path a client names;
/// the caller still checks that what it opened is a regular file of the recorded size.
public enum ReceivedFileLocation {
    /// The paths to try, in order. `downloadDirectory` is the daemon's own (`download_dir`,
    /// else `<state-dir>/files`).
    public static func candidates(recorded: String, downloadDirectory: String) -> [String] {
        guard let slash = recorded.lastIndex(of: "/") else { return [recorded] }
        let directory = String(recorded[..<slash])
        let name = String(recorded[recorded.index(after: slash)...])
        var current = downloadDirectory
        while current.count > 1, current.hasSuffix("/") { current.removeLast() }
        guard !name.isEmpty, name != ".", name != "..", directory != current else { return [recorded] }
        return [recorded, current + "/" + name]
    }
}
