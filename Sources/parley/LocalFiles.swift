import Foundation
import ParleyControlProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// Files the person sends: opened here, with the person's own rights, and passed to the
/// daemon as descriptors (issue 28). Every file is opened and checked before anything is
/// sent, so a send with attachments is all or nothing: one unreadable file and nothing goes.
struct OpenedFiles {
    let descriptors: [Int32]
    let attachments: [FileAttachment]

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Opens every path (relative to the current directory); throws naming the first that
    /// cannot be sent, with every descriptor opened so far closed again.
    static func open(_ paths: [String]) throws(Failure) -> OpenedFiles {
        guard paths.count <= DescriptorRights.maxDescriptorsPerMessage else {
            throw Failure(description: "at most \(DescriptorRights.maxDescriptorsPerMessage) files at once")
        }
        var fds: [Int32] = []
        var attachments: [FileAttachment] = []
        for path in paths {
            // O_NONBLOCK: opening a FIFO must not hang; regular files ignore it.
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
            guard fd >= 0 else {
                let why = String(cString: strerror(errno))
                DescriptorMessage.closeAll(fds)
                throw Failure(description: "cannot open \(path): \(why); nothing was sent")
            }
            fds.append(fd)
            var st = stat()
            guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
                DescriptorMessage.closeAll(fds)
                throw Failure(description: "cannot send \(path): not a regular file; nothing was sent")
            }
            let name = (path as NSString).lastPathComponent
            attachments.append(FileAttachment(name: name.isEmpty ? "file" : name))
        }
        return OpenedFiles(descriptors: fds, attachments: attachments)
    }

    func close() { DescriptorMessage.closeAll(descriptors) }

    /// `files.send` of these files to `to`; the descriptors are closed afterwards.
    func send(_ client: ControlClient, to: String, caption: String? = nil) throws(ControlClientError) -> FilesSendResult
    {
        defer { close() }
        let (result, extra) = try client.call(
            FilesSendParams(to: to, files: attachments, caption: caption), passing: descriptors)
        DescriptorMessage.closeAll(extra)
        return result
    }
}

/// A received file written out by the person's own `parley`: the daemon hands over a
/// read-only descriptor (`files.open`) and the bytes are copied here, so the new file
/// belongs to the person, gets the mode their umask gives, and never replaces a file.
enum ReceivedFileWriter {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Where the file goes: into `target` under `name` (a directory; `name (1).ext` if taken),
    /// or at `target` itself when it does not exist yet.
    static func write(from fd: Int32, size: Int, name: String, to target: String) throws(Failure) -> String {
        var st = stat()
        let isDirectory = stat(target, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
        if isDirectory {
            let safe = safeName(name)
            let (stem, ext) = FileMove.split(safe)
            for n in 0..<1_000 {
                let candidate = (target as NSString).appendingPathComponent(n == 0 ? safe : "\(stem) (\(n))\(ext)")
                let out = Glibc.open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
                if out < 0 && errno == EEXIST { continue }
                guard out >= 0 else {
                    throw Failure(description: "cannot create \(candidate): \(String(cString: strerror(errno)))")
                }
                try copy(from: fd, to: out, size: size, path: candidate)
                return candidate
            }
            throw Failure(description: "\(target) already holds 1000 files named like \(safe)")
        }
        let out = Glibc.open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o666)
        guard out >= 0 else {
            let why =
                errno == EEXIST
                ? "it exists (never overwritten): give a directory or a new name" : String(cString: strerror(errno))
            throw Failure(description: "cannot create \(target): \(why)")
        }
        try copy(from: fd, to: out, size: size, path: target)
        return target
    }

    /// The name as a plain file name (the daemon sanitized it already; this is the second
    /// line of defence): no directory part, no leading dot, never empty.
    static func safeName(_ name: String) -> String {
        var base = (name as NSString).lastPathComponent.replacingOccurrences(of: "/", with: "_")
        while base.hasPrefix(".") { base.removeFirst() }
        return base.isEmpty ? "received-file" : base
    }

    /// Copies `size` bytes; on any failure the partial file is removed.
    private static func copy(from fd: Int32, to out: Int32, size: Int, path: String) throws(Failure) {
        var ok = false
        defer {
            Glibc.close(out)
            if !ok { unlink(path) }
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset = 0
        while offset < size {
            let n = buffer.withUnsafeMutableBytes {
                pread(fd, $0.baseAddress, min($0.count, size - offset), off_t(offset))
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw Failure(
                    description:
                        "cannot read the received file: \(n < 0 ? String(cString: strerror(errno)) : "it is shorter than expected")"
                )
            }
            var written = 0
            while written < n {
                let w = buffer.withUnsafeBytes { Glibc.write(out, $0.baseAddress! + written, n - written) }
                if w < 0 && errno == EINTR { continue }
                guard w > 0 else {
                    throw Failure(description: "cannot write \(path): \(String(cString: strerror(errno)))")
                }
                written += w
            }
            offset += n
        }
        guard fsync(out) == 0 else {
            throw Failure(description: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        ok = true
    }
}
