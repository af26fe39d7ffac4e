/// Whether an existing `download_dir` is safe for the daemon to write received files into
/// (issue 28): it must be a directory the daemon's own user owns, that nobody else may
/// write to. Another local user who can write there could swap a received file for a link
/// or their own bytes before the person opens it, or fill it. Pure: the caller passes what
/// lstat(2) said.
public enum DownloadDirectoryCheck {
    public struct Facts: Equatable, Sendable {
        public var isDirectory: Bool
        public var isSymbolicLink: Bool
        public var ownerUID: UInt32
        /// The permission bits (st_mode & 0o7777).
        public var mode: UInt32
        public init(isDirectory: Bool, isSymbolicLink: Bool, ownerUID: UInt32, mode: UInt32) {
            self.isDirectory = isDirectory
            self.isSymbolicLink = isSymbolicLink
            self.ownerUID = ownerUID
            self.mode = mode
        }
    }

    /// Nil when fine; else what is wrong and what to do, for the error that stops the daemon.
    public static func problem(path: String, facts: Facts, daemonUID: UInt32, daemonUser: String) -> String? {
        if facts.isSymbolicLink {
            return "download_dir \(path) is a symbolic link; give the real directory's path"
        }
        guard facts.isDirectory else { return "download_dir \(path) exists and is not a directory" }
        if facts.ownerUID != daemonUID {
            return "download_dir \(path) is not owned by \(daemonUser), the user parleyd runs as (owner uid "
                + "\(facts.ownerUID)): `sudo chown \(daemonUser) \(path)`, or remove the download_dir line "
                + "(received files then stay in parleyd's state directory and `parley get ID --to DIR` "
                + "writes them out as you)"
        }
        if facts.mode & 0o022 != 0 {
            let mode = String(facts.mode & 0o7777, radix: 8)
            return "download_dir \(path) is writable by other users (mode \(mode)): `chmod go-w \(path)` "
                + "(e.g. 0700), or remove the download_dir line"
        }
        return nil
    }
}
