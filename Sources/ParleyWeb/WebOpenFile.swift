import Foundation
import ParleyWebCore

#if canImport(Glibc)
    import Glibc
#endif

/// The sign-in file: a tiny HTML page, mode 0600 in a 0700 directory, that sends the
/// browser on to the sign-in link (the secret in its fragment). `parley web` hands the
/// browser this file's *path* (`xdg-open FILE`), never the link: a process's arguments are
/// readable by every local user (`/proc/PID/cmdline`, `ps`). It exists only while its
/// `parley web` runs (`Claim`), so it can be opened at any time then (the systemd user
/// unit relies on this) and never points at a port after its server is gone.
public struct WebOpenFile: Sendable {
    public let path: String

    /// `$XDG_RUNTIME_DIR/parley/web.html` (the directory created 0700 if missing, refused
    /// unless private): one name whatever the port, so the person always knows where to
    /// look. Without a runtime directory, a fresh private directory under the temporary one.
    public static func defaultPath(environment: [String: String]) throws -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            let dir = runtime + "/parley"
            if mkdir(dir, 0o700) != 0 && errno != EEXIST { throw WebOpenFileError.cannotCreate(dir, errno) }
            try checkPrivate(dir)
            return dir + "/web.html"
        }
        var template = Array((NSTemporaryDirectory() + "/parley-web-XXXXXX").utf8CString)
        guard mkdtemp(&template) != nil else { throw WebOpenFileError.cannotCreate("temporary directory", errno) }
        return String(cString: template) + "/web.html"
    }

    /// The claim on a sign-in file: an exclusive `flock` on `FILE.lock`, held while its
    /// `parley web` runs and dropped by the kernel when it dies however it dies. A second
    /// `parley web` for the same file is refused; a file found without the claim held is
    /// stale.
    public final class Claim: Sendable {
        let fd: Int32

        /// Nil when another process holds it.
        public init?(_ file: WebOpenFile) {
            let fd = open(file.path + ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return nil }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                close(fd)
                return nil
            }
            self.fd = fd
        }

        public func release() { close(fd) }
    }

    /// Refuses a directory that is not the caller's own or that others can write to: they
    /// could put their own file, or the claim's lock, in its place. (`--open-file`: the
    /// file itself is 0600, so its directory may be readable.)
    public static func checkParentNotShared(_ path: String) throws {
        let dir = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        var st = stat()
        guard lstat(dir.isEmpty ? "/" : dir, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR,
            st.st_uid == geteuid(), st.st_mode & 0o022 == 0
        else { throw WebOpenFileError.sharedDirectory(dir) }
    }

    /// Refuses a directory others could write to or read from: the file's secret would be
    /// theirs.
    static func checkPrivate(_ dir: String) throws {
        var st = stat()
        guard lstat(dir, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR, st.st_uid == geteuid(),
            st.st_mode & 0o077 == 0
        else { throw WebOpenFileError.notPrivate(dir) }
    }

    public init(path: String) { self.path = path }

    /// The page's text for `url` (hex secret, digits: nothing to escape, checked anyway). A
    /// meta refresh keeps the fragment; the browser sends only the path to the server.
    static func html(redirectingTo url: String) -> String {
        precondition(url.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || ":/.?=_-#".contains($0)) })
        return """
            <!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">\
            <meta http-equiv="refresh" content="0;url=\(url)"><title>Parley</title>\
            <p>Opening Parley… <a href="\(url)">continue</a></p>

            """
    }

    /// Writes the file atomically: a new 0600 file beside it, renamed over the old one.
    public func write(url: String) throws {
        let temporary = path + ".new"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw WebOpenFileError.cannotCreate(temporary, errno) }
        let bytes = Array(Self.html(redirectingTo: url).utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == bytes.count, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw WebOpenFileError.cannotCreate(path, errno)
        }
    }

    public func remove() { unlink(path) }
}

public enum WebOpenFileError: Error, CustomStringConvertible {
    case cannotCreate(String, Int32)
    case notPrivate(String)
    case sharedDirectory(String)

    public var description: String {
        switch self {
        case .cannotCreate(let path, let code):
            return "cannot write \(path): \(String(cString: strerror(code)))"
        case .notPrivate(let dir):
            return "\(dir) is not a private directory of yours (it must be mode 0700): fix it with chmod 700 \(dir)"
        case .sharedDirectory(let dir):
            return
                "\(dir) is not your own directory, or others can write to it: put the sign-in file (--open-file) in a directory only you can write"
        }
    }
}
