import Foundation
import ParleyCore

/// The receiver's partial file (`.parley-<transfer>.part` in the download directory, mode
/// 0600): chunks are written at their offset with `pwrite`, made durable with `fdatasync`
/// at checkpoints, and the file is moved to its final name once every chunk was verified,
/// with `link` (which never replaces an existing file) and `unlink`.
final class PartialFile {
    let directory: String
    let path: String
    private var fd: Int32

    static func name(for transfer: TransferID) -> String { ".parley-\(transfer.hex).part" }

    init(directory: String, transfer: TransferID) throws(FileError) {
        self.directory = directory
        path = directory + "/" + Self.name(for: transfer)
        // O_NOFOLLOW: a symlink planted under this name cannot redirect our writes.
        fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .io(path: path, operation: "cannot create", errno: errno) }
        fchmod(fd, 0o600)
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    func write(_ data: [UInt8], at offset: UInt64) throws(FileError) {
        var done = 0
        while done < data.count {
            let n = data.withUnsafeBytes { b in
                pwrite(fd, b.baseAddress! + done, data.count - done, off_t(offset) + off_t(done))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw .io(path: path, operation: "cannot write", errno: errno)
            }
            done += n
        }
    }

    /// Starts writing `length` bytes at `offset` to the disk without waiting (Linux
    /// `sync_file_range(SYNC_FILE_RANGE_WRITE)`): the file's dirty pages never pile up
    /// between checkpoints, so the checkpoint's `fdatasync` has little left to do, and an
    /// fsync elsewhere on the same file system (the store's, for every chat message: ext4
    /// commits its journal for the whole file system) does not wait behind megabytes of this
    /// file. Advisory: an error here shows at the next `sync`.
    func startWriteback(offset: UInt64, length: Int) {
        _ = Self.syncFileRange?(fd, Int64(offset), Int64(length), Self.syncFileRangeWrite)
    }

    /// `sync_file_range(2)`: glibc declares it only under _GNU_SOURCE, which the Swift
    /// Glibc module does not set, so it is looked up once by name (nil elsewhere: no-op).
    private typealias SyncFileRange = @convention(c) (Int32, Int64, Int64, UInt32) -> Int32
    private static let syncFileRange: SyncFileRange? = dlsym(nil, "sync_file_range").map {
        unsafeBitCast($0, to: SyncFileRange.self)
    }
    /// `SYNC_FILE_RANGE_WRITE` (linux/fs.h): start writeback of the range, do not wait.
    private static let syncFileRangeWrite: UInt32 = 2

    func sync() throws(FileError) {
        guard fdatasync(fd) == 0 else { throw .io(path: path, operation: "cannot sync", errno: errno) }
    }

    /// Gives the finished file its name in the directory: `name`, else `name (1)`, ...;
    /// never replaces a file. Returns the final path.
    func moveIntoPlace(name: String) throws(FileError) -> String {
        try sync()
        for n in 0..<10_000 {
            let candidate = directory + "/" + FileName.numbered(name, n)
            if link(path, candidate) == 0 {
                unlink(path)
                syncDirectory()
                return candidate
            }
            if errno != EEXIST { throw .io(path: candidate, operation: "cannot create", errno: errno) }
        }
        throw .io(path: directory + "/" + name, operation: "cannot find a free name like", errno: EEXIST)
    }

    /// Closes and deletes the partial file.
    func discard() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
        unlink(path)
    }

    private func syncDirectory() {
        let d = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if d >= 0 {
            fsync(d)
            Glibc.close(d)
        }
    }
}
