import Foundation
import ParleyNodeCore

/// lstat(2) of a configured `download_dir`, judged by `DownloadDirectoryCheck`.
enum DownloadDirectory {
    /// Nil when the directory does not exist yet (it is created 0700 on first use) or is fine.
    static func problem(_ path: String) -> String? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        let type = st.st_mode & S_IFMT
        let user = getpwuid(getuid()).map { String(cString: $0.pointee.pw_name) } ?? "uid \(getuid())"
        return DownloadDirectoryCheck.problem(
            path: path,
            facts: .init(
                isDirectory: type == S_IFDIR, isSymbolicLink: type == S_IFLNK, ownerUID: st.st_uid,
                mode: UInt32(st.st_mode & 0o7777)),
            daemonUID: getuid(), daemonUser: user)
    }
}
