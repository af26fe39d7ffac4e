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

    /// The page's text. It does not simply send the browser on: it first asks the server on
    /// the port to prove it holds the secret (the handshake's probe, docs/WEB.md "Signing
    /// in"), so a stale file (its `parley web` killed, not yet restarted) opened while
    /// another user holds the port goes nowhere and says why. Only digits and hex go in
    /// (nothing to escape). No CSP applies to a `file://` page; the script is this file's
    /// own, in the person's private directory.
    static func html(port: Int, secret: WebSecret) -> String {
        let target = "http://127.0.0.1:\(port)/#k=\(secret.text)"
        return """
            <!doctype html><html lang="en"><meta charset="utf-8"><meta name="referrer" content="no-referrer">
            <title>Parley</title>
            <p id="status">Checking that this is your Parley…</p>
            <script>
            (async () => {
              const say = (text) => { document.getElementById("status").textContent = text; };
              const port = \(port), secret = "\(secret.text)", target = "\(target)";
              const bytes = (hex) => new Uint8Array(hex.match(/../g).map((b) => parseInt(b, 16)));
              const hex = (b) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
              const notRunning = "Parley web is not running on port " + port + ": start it again " +
                "(parley web, or systemctl --user restart parley-web) and open its new sign-in link.";
              try {
                const key = await crypto.subtle.importKey("raw", bytes(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
                const nonce = hex(crypto.getRandomValues(new Uint8Array(32)));
                const answer = await new Promise((resolve, reject) => {
                  const ws = new WebSocket("ws://127.0.0.1:" + port + "/ws");
                  const timer = setTimeout(() => { ws.close(); reject(new Error("no answer")); }, 10000);
                  ws.onopen = () => ws.send(JSON.stringify({ auth: "hello", nonce }));
                  ws.onmessage = (e) => { clearTimeout(timer); ws.close(); resolve(e.data); };
                  ws.onerror = () => { clearTimeout(timer); reject(new Error("not running")); };
                });
                let m = null;
                try { m = JSON.parse(answer); } catch (e) { /* checked below */ }
                const proven = m && m.auth === "proof" && /^[0-9a-f]{64}$/.test(m.proof) &&
                  await crypto.subtle.verify("HMAC", key, bytes(m.proof),
                    new TextEncoder().encode(["\(WebSignInKey.serverProofLabel)", "null", nonce].join("\\n")));
                if (!proven) {
                  say("This is not your Parley: the program on port " + port + " could not prove it is your " +
                    "parley web (it stopped, and another program took its port). Nothing was sent to it. " + notRunning);
                  return;
                }
                location.replace(target);
              } catch (e) {
                say(notRunning);
              }
            })();
            </script>
            <noscript>Parley's sign-in needs JavaScript.</noscript>

            """
    }

    /// Writes the file atomically: a new 0600 file beside it, renamed over the old one.
    public func write(port: Int, secret: WebSecret) throws {
        let temporary = path + ".new"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw WebOpenFileError.cannotCreate(temporary, errno) }
        let bytes = Array(Self.html(port: port, secret: secret).utf8)
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
