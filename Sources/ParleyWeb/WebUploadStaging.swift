import Foundation
import NIOConcurrencyHelpers
import NIOCore
import ParleyWebCore

#if canImport(Glibc)
    import Glibc
#endif

/// The files uploaded from the page, staged where the daemon can read them in place while
/// it sends: `$XDG_CACHE_HOME/parley/web-uploads` (else `~/.cache/parley/web-uploads`),
/// the *client's* own per-user cache, mode 0700 (the daemon refuses paths inside its own
/// state directory). Each upload gets a fresh directory `<16 random hex>/` holding the
/// file under its sanitized name (0600, created exclusively, never following a link) and,
/// once `files.send` answered, `.transfers` (the transfer ids, one a line), which lets a
/// later `parley web` clean up after this one. The limits (`WebUploadAdmission`) are
/// checked before a byte is read; a failed upload removes its directory at once; a staged
/// file is removed when `WebStagingCleanup` says so (its transfers ended, or too old).
final class WebUploadStaging: Sendable {
    struct Entry: Sendable {
        var directory: String
        var bytes: Int64
        var facts: WebStagedEntry
    }

    /// An upload admitted and running: its directory and the file it writes.
    struct Ticket: Sendable {
        var key: String
        var directory: String
        var file: String
    }

    static let transfersFileName = ".transfers"

    let root: String
    private let entries = NIOLockedValueBox([String: Entry]())

    /// `$XDG_CACHE_HOME/parley/web-uploads` or `$HOME/.cache/parley/web-uploads`.
    static func defaultRoot(environment: [String: String]) throws(WebUploadError) -> String {
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") { return cache + "/parley/web-uploads" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.cache/parley/web-uploads" }
        throw .stagingFailed("neither XDG_CACHE_HOME nor HOME is set to an absolute path")
    }

    /// Creates the directory (and its parents) if missing, refuses one others can enter,
    /// and adopts what an earlier `parley web` left there, for the sweep to clean.
    init(root: String) throws(WebUploadError) {
        self.root = root
        var path = ""
        for component in root.split(separator: "/") {
            path += "/" + component
            if mkdir(path, 0o700) != 0 && errno != EEXIST {
                throw .stagingFailed("cannot create \(path): \(String(cString: strerror(errno)))")
            }
        }
        var st = stat()
        guard lstat(root, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR, st.st_uid == geteuid(), st.st_mode & 0o077 == 0
        else {
            throw .stagingFailed(
                "\(root) must be a directory of yours that only you can enter: fix it with chmod 700 \(root)")
        }
        adoptLeftovers()
    }

    private func adoptLeftovers() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: root) else { return }
        var adopted: [String: Entry] = [:]
        for name in names where Self.isEntryName(name) {
            let directory = root + "/" + name
            var st = stat()
            guard lstat(directory, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else { continue }
            let ids = (try? String(contentsOfFile: directory + "/" + Self.transfersFileName, encoding: .utf8))
                .map { $0.split(separator: "\n").map(String.init) }
            var bytes: Int64 = 0
            for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
                var fileStat = stat()
                if lstat(directory + "/" + file, &fileStat) == 0 { bytes += Int64(fileStat.st_size) }
            }
            let createdAtMs = Int64(st.st_mtim.tv_sec) * 1000
            adopted[name] = Entry(
                directory: directory, bytes: bytes,
                facts: WebStagedEntry(createdAtMs: createdAtMs, transferIDs: ids, uploading: false))
        }
        entries.withLockedValue { $0.merge(adopted) { current, _ in current } }
    }

    static func isEntryName(_ name: String) -> Bool {
        name.utf8.count == 16 && name.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// Bytes staged and reserved, and uploads running.
    var usage: (bytes: Int64, uploading: Int) {
        entries.withLockedValue { all in
            (all.values.reduce(0) { $0 + $1.bytes }, all.values.filter(\.facts.uploading).count)
        }
    }

    /// Admits an upload (or says why not) and creates its directory. The size is reserved
    /// until the entry is removed.
    func begin(_ upload: WebUploadRequest, nowMs: Int64) -> Result<Ticket, WebUploadError> {
        var fs = statvfs()
        guard statvfs(root, &fs) == 0 else {
            return .failure(
                .stagingFailed("cannot read the free space of \(root): \(String(cString: strerror(errno)))"))
        }
        let free = Int64(fs.f_bavail) * Int64(fs.f_frsize)
        // 64 random bits (libsodium): a name no one can guess or make collide.
        let key = String(WebSecret.random().text.prefix(16))
        let directory = root + "/" + key
        return entries.withLockedValue { all -> Result<Ticket, WebUploadError> in
            let staged = all.values.reduce(0) { $0 + $1.bytes }
            let running = all.values.filter(\.facts.uploading).count
            if let refusal = WebUploadAdmission.check(
                size: upload.size, activeUploads: running, stagedBytes: staged, freeBytes: free)
            {
                return .failure(refusal)
            }
            guard mkdir(directory, 0o700) == 0 else {
                return .failure(.stagingFailed("cannot create \(directory): \(String(cString: strerror(errno)))"))
            }
            all[key] = Entry(
                directory: directory, bytes: upload.size,
                facts: WebStagedEntry(createdAtMs: nowMs, transferIDs: nil, uploading: true))
            return .success(Ticket(key: key, directory: directory, file: directory + "/" + upload.name))
        }
    }

    /// Streams the body into the ticket's file: exactly `size` bytes, or an error (the
    /// caller then calls `abandon`).
    func write<Body: AsyncSequence>(_ body: Body, size: Int64, to ticket: Ticket) async throws(WebUploadError)
    where Body.Element == ByteBuffer {
        let fd = open(ticket.file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw .stagingFailed("cannot create the staged file: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var received: Int64 = 0
        do {
            for try await buffer in body {
                received += Int64(buffer.readableBytes)
                // More than declared: the declared size is what the limits were checked on.
                guard received <= size else { throw WebUploadError.tooLarge(size: received) }
                try buffer.withUnsafeReadableBytes { raw in
                    var offset = 0
                    while offset < raw.count {
                        let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                        if n < 0 {
                            if errno == EINTR { continue }
                            throw WebUploadError.stagingFailed(
                                "writing the staged file: \(String(cString: strerror(errno)))")
                        }
                        offset += n
                    }
                }
            }
        } catch let error as WebUploadError {
            throw error
        } catch {
            throw .incomplete(received: received, expected: size)
        }
        guard received == size else { throw .incomplete(received: received, expected: size) }
    }

    /// The transfers `files.send` made for the ticket: written beside the file for a later
    /// `parley web`, and the entry now waits for them to end.
    func sent(_ ticket: Ticket, transferIDs: [String]) {
        let text = transferIDs.joined(separator: "\n")
        let path = ticket.directory + "/" + Self.transfersFileName
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd >= 0 {
            _ = text.utf8CString.withUnsafeBufferPointer { Glibc.write(fd, $0.baseAddress, $0.count - 1) }
            close(fd)
        }
        entries.withLockedValue { all in
            all[ticket.key]?.facts.transferIDs = transferIDs
            all[ticket.key]?.facts.uploading = false
        }
    }

    /// Removes the ticket's directory and everything in it: a failed upload leaves nothing.
    func abandon(_ ticket: Ticket) { remove(key: ticket.key) }

    private func remove(key: String) {
        let directory = root + "/" + key
        for file in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            unlink(directory + "/" + file)
        }
        rmdir(directory)
        _ = entries.withLockedValue { $0.removeValue(forKey: key) }
    }

    /// The transfer ids of every entry waiting on its transfers (what the sweep asks the
    /// daemon about).
    var transferIDsToCheck: [String] {
        entries.withLockedValue { all in all.values.flatMap { $0.facts.transferIDs ?? [] } }
    }

    var isEmpty: Bool { entries.withLockedValue { $0.isEmpty } }

    /// Removes every entry `WebStagingCleanup` says is done with. Returns the removed keys.
    @discardableResult
    func sweep(states: [String: String?], nowMs: Int64) -> [String] {
        let done = entries.withLockedValue { all in
            all.filter { WebStagingCleanup.decide($0.value.facts, states: states, nowMs: nowMs) != .keep }.map(\.key)
        }
        for key in done { remove(key: key) }
        return done
    }
}
