import Foundation
import ParleyCore

/// The sender's source file, read in place (never copied): opened read-only, checked
/// against the size and modification time recorded when it was offered, read chunk by
/// chunk with `pread`.
final class SourceFile {
    let path: String
    private var fd: Int32
    let size: UInt64
    /// Modification time in nanoseconds since the epoch.
    let modified: Int64

    init(path: String) throws(FileError) {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .io(path: path, operation: "cannot open", errno: errno) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw .io(path: path, operation: "cannot stat", errno: e)
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            Glibc.close(fd)
            throw .notSendable(path: path, reason: "not a regular file")
        }
        self.path = path
        self.fd = fd
        self.size = UInt64(st.st_size)
        self.modified = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Whether the file on disk is still the one offered (same size and modification time).
    func unchanged(size: Int64?, modified: Int64?) -> Bool {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return false }
        let m = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
        return Int64(st.st_size) == size && m == modified
    }

    /// Fills `buffer` with the bytes at `offset`: where the chunk is sent from (the record
    /// stream's pending buffer), with no array of its own and no zero-fill first. Throws if the
    /// file ended first (it shrank since it was offered).
    func read(offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws(FileError) {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw .io(path: path, operation: "cannot read", errno: errno)
            }
            if n == 0 { throw .notSendable(path: path, reason: "it is shorter than when it was offered") }
            done += n
        }
    }

    /// What an offer needs: the chunk hashes and the hash of their list, which is the file's
    /// hash (docs/PROTOCOL.md "Files": one hash pass over the data, on each side).
    /// Reads the whole file once; run off the event loop for large files.
    struct Digest: Sendable {
        var size: UInt64
        var modified: Int64
        var chunkHashes: [[UInt8]]
        var listHash: [UInt8]
        /// The file's hash in the offer: the root of its hash tree, `listHash`.
        var contentHash: [UInt8] { listHash }
    }

    func digest(chunkSize: Int) throws(FileError) -> Digest {
        var failure: Int32 = 0
        let tree = FileHash.ofFile(size: size, chunkSize: chunkSize) { buffer, offset in
            while true {
                let n = pread(fd, buffer.baseAddress!, buffer.count, off_t(offset))
                if n < 0 && errno == EINTR { continue }
                if n < 0 { failure = errno }
                return max(n, 0)
            }
        }
        if failure != 0 { throw .io(path: path, operation: "cannot read", errno: failure) }
        guard let tree else { throw .notSendable(path: path, reason: "it changed while being read") }
        return Digest(size: size, modified: modified, chunkHashes: tree.chunkHashes, listHash: tree.fileHash)
    }
}
