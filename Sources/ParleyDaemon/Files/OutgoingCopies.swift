import Foundation
import ParleyCore

/// The daemon's own copies of files a local client sent (`files.send` on the descriptor
/// socket): `<state-dir>/outgoing/<random>`, mode 0600. The client passes an open
/// descriptor (it opened the file with its own rights); the daemon copies the bytes here at
/// once, so the file can be served after a restart and after the client is gone, and the
/// daemon never opens a path a client chose. One hard link per recipient, removed when that
/// transfer ends (`FileDriver.finishOutgoing`), so a room's members share the bytes on disk.
struct OutgoingCopies: Sendable {
    let directory: String

    /// Free space kept after a copy: the daemon's own database and logs must still fit.
    static let keepFreeBytes: UInt64 = 64 << 20
    /// Copy buffer: two chunks. Small enough to stay in the core's cache between the read,
    /// the write and the hashing: on the bench VM a copy through a 1 MiB buffer cost 0.07 to
    /// 0.58 s of system time per 256 MiB (the kernel's copy into the page cache reads the
    /// buffer back from memory), through 128 KiB 0.07 to 0.18 s (issue 32, row 10t); a
    /// system call per 128 KiB is still few (8,192 per GiB).
    static let copyBufferBytes = 128 << 10

    init(stateDirectory: String?) {
        directory = (stateDirectory ?? NSTemporaryDirectory() + "parley-\(getuid())") + "/outgoing"
    }

    /// Whether `path` is one of these copies (so it is removed when its transfer ends).
    func holds(_ path: String) -> Bool { path.hasPrefix(directory + "/") }

    /// Checks the descriptor (a regular file open for reading, within the size limit) and
    /// copies it; returns the copy's path. `name` is only for error messages.
    func copy(descriptor fd: Int32, name: String) throws(FileError) -> String {
        try copyAndDigest(descriptor: fd, name: name, chunkSize: FileLimits.preferredChunkSize).path
    }

    /// The copy and what its offer needs (`SourceFile.Digest`: the chunk hashes and their
    /// list's hash), hashed from the copy buffer as each chunk is written (issue 32: the
    /// source is read once, not copied and then read back to be hashed). The digest is of
    /// the bytes written to the copy, and its size and modification time are the copy's own
    /// after the sync, so `SourceFile.unchanged` holds for it.
    func copyAndDigest(
        descriptor fd: Int32, name: String, chunkSize: Int = FileLimits.preferredChunkSize
    ) throws(FileError) -> (
        path: String, digest: SourceFile.Digest
    ) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .io(path: name, operation: "cannot inspect", errno: errno) }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            throw .notSendable(
                path: name, reason: "not a regular file (only files can be sent, not directories or devices)")
        }
        let size = UInt64(st.st_size)
        guard size <= FileLimits.maxFileBytes else { throw .tooLarge(path: name, size: size) }
        let mode = fcntl(fd, F_GETFL)
        guard mode >= 0, mode & O_ACCMODE != O_WRONLY else {
            throw .notSendable(path: name, reason: "the descriptor passed is not open for reading")
        }
        try prepareDirectory()
        var vfs = statvfs()
        if statvfs(directory, &vfs) == 0 {
            let free = UInt64(vfs.f_bavail) &* UInt64(vfs.f_frsize)
            guard free >= size &+ Self.keepFreeBytes else {
                throw .notSendable(
                    path: name,
                    reason: "parleyd's disk has \(free >> 20) MiB free, too little to keep a copy until it is sent")
            }
        }
        let path = directory + "/" + TransferID.random().hex
        let out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard out >= 0 else { throw .io(path: directory, operation: "cannot create a copy in", errno: errno) }
        var done = false
        defer {
            close(out)
            if !done { unlink(path) }
        }
        // Whole chunks per buffer, so each chunk's hash is taken from one fill.
        let bufferBytes = max(chunkSize, Self.copyBufferBytes / chunkSize * chunkSize)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferBytes, alignment: 64)
        defer { buffer.deallocate() }
        var chunkHashes: [[UInt8]] = []
        var offset: UInt64 = 0
        var ended = false
        while !ended {
            // Fill the buffer (short reads are retried) unless the file ends first.
            var filled = 0
            while filled < bufferBytes {
                let n = pread(fd, buffer.baseAddress! + filled, bufferBytes - filled, off_t(offset) + off_t(filled))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw .io(path: name, operation: "cannot read", errno: errno)
                }
                if n == 0 {
                    ended = true
                    break
                }
                filled += n
            }
            if filled == 0 { break }
            offset += UInt64(filled)
            guard offset <= FileLimits.maxFileBytes else { throw .tooLarge(path: name, size: offset) }
            var written = 0
            while written < filled {
                let w = write(out, buffer.baseAddress! + written, filled - written)
                if w < 0 {
                    if errno == EINTR { continue }
                    throw .io(path: directory, operation: "cannot write a copy in", errno: errno)
                }
                written += w
            }
            var start = 0
            while start < filled {
                let end = min(start + chunkSize, filled)
                chunkHashes.append(FileHash.of(UnsafeRawBufferPointer(rebasing: buffer[start..<end])))
                start = end
            }
        }
        guard fsync(out) == 0 else { throw .io(path: directory, operation: "cannot write a copy in", errno: errno) }
        var copied = stat()
        guard fstat(out, &copied) == 0 else {
            throw .io(path: directory, operation: "cannot inspect a copy in", errno: errno)
        }
        guard UInt64(copied.st_size) == offset else {
            throw .notSendable(path: name, reason: "its copy changed while it was made; send it again")
        }
        let modified = Int64(copied.st_mtim.tv_sec) * 1_000_000_000 + Int64(copied.st_mtim.tv_nsec)
        done = true
        return (
            path,
            SourceFile.Digest(
                size: offset, modified: modified, chunkHashes: chunkHashes, listHash: FileHash.listHash(chunkHashes))
        )
    }

    /// A second name for the copy, one per further recipient.
    func link(_ path: String) throws(FileError) -> String {
        let other = directory + "/" + TransferID.random().hex
        guard Glibc.link(path, other) == 0 else {
            throw .io(path: directory, operation: "cannot link a copy in", errno: errno)
        }
        return other
    }

    func remove(_ path: String) {
        if holds(path) { unlink(path) }
    }

    /// At start: removes copies no unfinished transfer needs (the daemon stopped between a
    /// copy and its offer, or between a transfer's end and the copy's removal). Returns how
    /// many went.
    @discardableResult
    func sweep(keeping needed: Set<String>) -> Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return 0 }
        var removed = 0
        for name in names where !needed.contains(directory + "/" + name) {
            if unlink(directory + "/" + name) == 0 { removed += 1 }
        }
        return removed
    }

    /// Creates the directory 0700; refuses one that is not the daemon's own and private.
    func prepareDirectory() throws(FileError) {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw .io(path: directory, operation: "cannot create", errno: errno)
        }
        var st = stat()
        guard lstat(directory, &st) == 0 else { throw .io(path: directory, operation: "cannot inspect", errno: errno) }
        guard (st.st_mode & S_IFMT) == S_IFDIR, st.st_uid == getuid(), st.st_mode & 0o077 == 0 else {
            throw .notSendable(
                path: directory, reason: "parleyd's copy directory must be its own, mode 0700: remove it and retry")
        }
    }
}
