import ArgumentParser
import Foundation
import ParleyCore

#if canImport(Glibc)
    import Glibc
#endif

/// `parley files hash PATH`: the file's hash as Parley computes it (docs/PROTOCOL.md "Files":
/// BLAKE2b-256 of the list of its chunks' BLAKE2b-256 hashes), the `contentHash` that
/// `parley files --json` shows on both sides. Two people compare it out of band to know they
/// hold the same bytes. Local only: no daemon is asked.
struct FilesHash: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hash",
        abstract: "Print a file's Parley hash (the contentHash a transfer of it shows), without a daemon.",
        discussion: """
            The hash depends on the chunk size of the transfer: parleyd sends in 65536-byte chunks \
            (the default here); an offer from another implementation may use 4096 ... 65536.
            """)
    @Argument(help: "The file.") var path: String
    @Option(name: .long, help: "Chunk size in bytes: a power of two from 4096 to 65536 (default 65536).")
    var chunkSize: Int = FileLimits.preferredChunkSize

    func validate() throws {
        guard chunkSize.nonzeroBitCount == 1, (FileLimits.minChunkSize...FileLimits.maxChunkSize).contains(chunkSize)
        else {
            throw ValidationError(
                "--chunk-size must be a power of two from \(FileLimits.minChunkSize) to \(FileLimits.maxChunkSize)")
        }
    }

    func run() throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ValidationError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw ValidationError("\(path) is not a regular file")
        }
        var failure: Int32 = 0
        let tree = FileHash.ofFile(size: UInt64(st.st_size), chunkSize: chunkSize) { buffer, offset in
            while true {
                let n = pread(fd, buffer.baseAddress!, buffer.count, off_t(offset))
                if n < 0 && errno == EINTR { continue }
                if n < 0 { failure = errno }
                return max(n, 0)
            }
        }
        if failure != 0 { throw ValidationError("cannot read \(path): \(String(cString: strerror(failure)))") }
        guard let tree else { throw ValidationError("\(path) changed while it was read; run it again") }
        print("\(Sodium.hex(tree.fileHash))  \(path)")
    }
}
