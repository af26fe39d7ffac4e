import Foundation
import ParleyNodeCore

/// How the thumbnail child is started: the tools found on PATH, and the command line that
/// runs one of them under `prlimit` (the rlimits of `ThumbnailLimits`) and, where it works,
/// under bubblewrap (`bwrap`): no network, no IPC, its own PID namespace, no capabilities,
/// a read-only view of `/usr` (and the `/lib*` links) and of the one input file, nothing
/// else (no home, no state directory, no /tmp). The argument lists are pure functions,
/// unit-tested; `probe` runs bwrap once to see whether it works here (it may not inside
/// some containers) and the answer is cached for the daemon's life.
struct ThumbnailSandbox: Sendable, Equatable {
    /// Absolute paths of the programs. A missing one means no thumbnails (`prlimit`,
    /// `vipsthumbnail`, `vipsheader`) or no bubblewrap (`bwrap`).
    var prlimit: String
    var vipsthumbnail: String
    var vipsheader: String
    /// Nil: rlimits only (logged once).
    var bwrap: String?
    /// The host's `/lib`, `/lib64`, `/lib32` and `/bin`: a symlink (merged /usr) is recreated
    /// as the same symlink inside, a directory is bound read-only.
    var rootLinks: [(path: String, symlinkTarget: String?)] = []

    static func == (a: ThumbnailSandbox, b: ThumbnailSandbox) -> Bool {
        a.prlimit == b.prlimit && a.vipsthumbnail == b.vipsthumbnail && a.vipsheader == b.vipsheader
            && a.bwrap == b.bwrap && a.rootLinks.map(\.path) == b.rootLinks.map(\.path)
            && a.rootLinks.map(\.symlinkTarget) == b.rootLinks.map(\.symlinkTarget)
    }

    /// Where the input file appears inside bubblewrap: a fixed name, so neither the user's
    /// directory layout nor libvips' `name[options]` syntax in a file name reaches the child.
    static let inputInside = "/input"

    /// The environment of the child: nothing of parleyd's (it may hold secrets, or a
    /// VIPS_* setting that lifts a limit), one libvips worker thread, no disc spill (an
    /// image too large for memory fails against RLIMIT_AS instead of filling a disk),
    /// libvips' loaders marked untrusted (ImageMagick, matlab, ...) blocked.
    static let environment: [String: String] = [
        "PATH": "/usr/bin:/bin",
        "LANG": "C",
        "VIPS_CONCURRENCY": "1",
        "VIPS_DISC_THRESHOLD": "4g",
        "VIPS_BLOCK_UNTRUSTED": "1",
        "VIPS_WARNING": "0"
    ]

    /// The rlimits, as `prlimit` options (RLIMIT_CPU, AS, FSIZE, NOFILE, CORE).
    static var rlimitArguments: [String] {
        [
            "--cpu=\(ThumbnailLimits.cpuSeconds)", "--as=\(ThumbnailLimits.addressSpaceBytes)",
            "--fsize=\(ThumbnailLimits.fileSizeBytes)", "--nofile=\(ThumbnailLimits.openFiles)", "--core=0"
        ]
    }

    /// bubblewrap's options for `input` (nil: the probe, no input bound).
    func bwrapArguments(input: String?) -> [String] {
        var a = [
            "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--ro-bind", "/usr", "/usr"
        ]
        for link in rootLinks {
            if let target = link.symlinkTarget {
                a += ["--symlink", target, link.path]
            } else {
                a += ["--ro-bind", link.path, link.path]
            }
        }
        a += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache", "--proc", "/proc", "--dev", "/dev"]
        if let input { a += ["--ro-bind", input, Self.inputInside] }
        a += ["--chdir", "/"]
        return a
    }

    /// The command line (program, arguments) that runs `tool toolArguments` on `input`:
    /// `prlimit <limits> -- [bwrap <sandbox> --] tool args`. `toolArguments` name the input
    /// as `inputName`, which is `/input` under bubblewrap and the real path without it.
    func command(tool: String, input: String?, toolArguments: (String) -> [String]) -> (String, [String]) {
        var a = Self.rlimitArguments + ["--"]
        if let bwrap {
            a += [bwrap] + bwrapArguments(input: input) + ["--", tool]
            a += toolArguments(input == nil ? "" : Self.inputInside)
        } else {
            a += [tool] + toolArguments(input ?? "")
        }
        return (prlimit, a)
    }

    /// `vipsheader FILE`: one line with the declared width and height, read from the header
    /// only (no pixels), checked against `ThumbnailLimits.maxSourcePixels` before decoding.
    func headerCommand(input: String) -> (String, [String]) {
        command(tool: vipsheader, input: input) { [$0] }
    }

    /// `vipsthumbnail FILE --size 160x160 -o .jpg[Q=q,strip]`: a JPEG on stdout, at most
    /// 160 pixels wide and high, without metadata (no EXIF location of the sender's picture).
    func thumbnailCommand(input: String, quality: Int) -> (String, [String]) {
        let size = ThumbnailLimits.maxDimension
        return command(tool: vipsthumbnail, input: input) {
            [$0, "--size", "\(size)x\(size)", "-o", ".jpg[Q=\(quality),strip]"]
        }
    }

    /// Finds the tools on `path` (a PATH value); nil when one of the three needed is missing.
    static func find(path: String?) -> ThumbnailSandbox? {
        let dirs = (path ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        func which(_ name: String) -> String? {
            dirs.lazy.map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
        }
        guard let prlimit = which("prlimit"), let thumb = which("vipsthumbnail"), let header = which("vipsheader")
        else { return nil }
        var links: [(String, String?)] = []
        for p in ["/bin", "/lib", "/lib64", "/lib32"] {
            var st = stat()
            guard lstat(p, &st) == 0 else { continue }
            if (st.st_mode & S_IFMT) == S_IFLNK {
                var buf = [CChar](repeating: 0, count: 256)
                let n = readlink(p, &buf, buf.count - 1)
                guard n > 0 else { continue }
                links.append((p, String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)))
            } else if (st.st_mode & S_IFMT) == S_IFDIR {
                links.append((p, nil))
            }
        }
        // Inside bubblewrap only /usr is visible: tools elsewhere run with rlimits only.
        let sandboxable = [thumb, header].allSatisfy { $0.hasPrefix("/usr/") }
        return ThumbnailSandbox(
            prlimit: prlimit, vipsthumbnail: thumb, vipsheader: header,
            bwrap: sandboxable ? which("bwrap") : nil, rootLinks: links)
    }
}
