import CConfinedSpawn
import Foundation
import ParleyNodeCore

/// How the thumbnail child is started: the tools found on PATH, and how the child that runs
/// one of them is confined. The decoder reads a picture the user chose, which may be a
/// hostile file someone sent them, so it must be unable to read the daemon's state
/// (`/var/lib/parley`: identity keys, messages) or open a socket, even when compromised.
///
/// The confinements, best first (`ThumbnailMaker` probes once and steps down on failure):
/// - **Landlock + seccomp** (issue 29): the forked child restricts itself before execve
///   (`CConfinedSpawn`): it may read and execute below `/usr` (and `/lib*`,
///   `/etc/ld.so.cache`) and read its one input, which it gets as stdin and names
///   `/proc/self/fd/0`; nothing else of the file system, no TCP, no abstract Unix socket, no
///   signal outside itself; seccomp refuses every socket call and the kernel's needless
///   attack surface. This needs no namespaces, so it works inside the shipped unit
///   (`RestrictNamespaces=yes`, where bubblewrap cannot start).
/// - **bubblewrap**: a private mount namespace with `/usr` and the input only, no network,
///   where user namespaces are allowed and the kernel has no Landlock.
/// - **limits only**: rlimits, the seccomp filter and a cleared environment; logged once.
/// Every confinement also sets the rlimits of `ThumbnailLimits`. The command lines are
/// pure functions, unit-tested.
struct ThumbnailSandbox: Sendable, Equatable {
    enum Confinement: String, Sendable, Equatable {
        case landlock
        case bubblewrap
        case limitsOnly
    }

    /// Absolute paths of the programs. A missing vips tool means no thumbnails; no `bwrap`
    /// means no bubblewrap step.
    var vipsthumbnail: String
    var vipsheader: String
    var bwrap: String?
    /// The host's `/lib`, `/lib64`, `/lib32` and `/bin`: a symlink (merged /usr) is recreated
    /// as the same symlink inside bubblewrap, a directory is bound read-only.
    var rootLinks: [(path: String, symlinkTarget: String?)] = []
    /// The confinement to use (the probe may step it down).
    var confinement: Confinement

    static func == (a: ThumbnailSandbox, b: ThumbnailSandbox) -> Bool {
        a.vipsthumbnail == b.vipsthumbnail && a.vipsheader == b.vipsheader
            && a.bwrap == b.bwrap && a.rootLinks.map(\.path) == b.rootLinks.map(\.path)
            && a.rootLinks.map(\.symlinkTarget) == b.rootLinks.map(\.symlinkTarget) && a.confinement == b.confinement
    }

    /// Where the input file appears inside bubblewrap: a fixed name, so neither the user's
    /// directory layout nor libvips' `name[options]` syntax in a file name reaches the child.
    static let inputInside = "/input"
    /// How the child names its input otherwise: its stdin, an open descriptor of the one file.
    static let inputDescriptor = "/proc/self/fd/0"
    /// What a Landlock-confined child may read and execute: the system's programs and
    /// libraries and the dynamic loader's cache. Never /etc as a whole, /var, /home, /tmp,
    /// /run or /proc (its input it reaches through the descriptor, allowed by itself).
    static let landlockReadable = ["/usr", "/bin", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache"]

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

    /// The rlimits every child gets (RLIMIT_CPU, AS, FSIZE, NOFILE; CORE is always 0).
    static let limits = pc_limits(
        cpu_seconds: UInt64(ThumbnailLimits.cpuSeconds), address_space_bytes: UInt64(ThumbnailLimits.addressSpaceBytes),
        file_size_bytes: UInt64(ThumbnailLimits.fileSizeBytes), open_files: UInt64(ThumbnailLimits.openFiles))

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

    /// The child that runs `tool toolArguments` on `input` (a path; nil for the probe).
    /// Under bubblewrap the path is bound as `/input`; otherwise the caller opens it and
    /// passes the descriptor as stdin (`ChildRun.run(_:input:)`), and the tool reads
    /// `/proc/self/fd/0`: the path itself never reaches the tool.
    func command(tool: String, input: String?, toolArguments: (String) -> [String]) -> ChildCommand {
        switch confinement {
        case .bubblewrap:
            let args = bwrapArguments(input: input) + ["--", tool] + toolArguments(input == nil ? "" : Self.inputInside)
            // bubblewrap makes namespaces, which the seccomp filter refuses: not both.
            return ChildCommand(program: bwrap ?? tool, arguments: args, landlockReadable: nil, seccomp: false)
        case .landlock:
            return ChildCommand(
                program: tool, arguments: toolArguments(input == nil ? "" : Self.inputDescriptor),
                landlockReadable: Self.landlockReadable, seccomp: true)
        case .limitsOnly:
            return ChildCommand(
                program: tool, arguments: toolArguments(input == nil ? "" : Self.inputDescriptor),
                landlockReadable: nil, seccomp: true)
        }
    }

    /// Whether the input goes to the child as its stdin (every confinement but bubblewrap's).
    var inputOnStdin: Bool { confinement != .bubblewrap }

    /// `vipsheader FILE`: one line with the declared width and height, read from the header
    /// only (no pixels), checked against `ThumbnailLimits.maxSourcePixels` before decoding.
    func headerCommand(input: String) -> ChildCommand {
        command(tool: vipsheader, input: input) { [$0] }
    }

    /// `vipsthumbnail FILE --size 160x160 -o .jpg[Q=q,strip]`: a JPEG on stdout, at most
    /// 160 pixels wide and high, without metadata (no EXIF location of the sender's picture).
    func thumbnailCommand(input: String, quality: Int) -> ChildCommand {
        let size = ThumbnailLimits.maxDimension
        return command(tool: vipsthumbnail, input: input) {
            [$0, "--size", "\(size)x\(size)", "-o", ".jpg[Q=\(quality),strip]"]
        }
    }

    /// The same tools one step less confined (nil below limits only).
    func steppedDown() -> ThumbnailSandbox? {
        var s = self
        switch confinement {
        case .landlock: s.confinement = bwrap != nil ? .bubblewrap : .limitsOnly
        case .bubblewrap: s.confinement = .limitsOnly
        case .limitsOnly: return nil
        }
        return s
    }

    /// Finds the tools on `path` (a PATH value); nil when one of the two needed is missing.
    /// `landlockABI` is the kernel's (`pc_landlock_abi()`; 0 without Landlock).
    static func find(path: String?, landlockABI: Int32 = pc_landlock_abi()) -> ThumbnailSandbox? {
        let dirs = (path ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        func which(_ name: String) -> String? {
            dirs.lazy.map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
        }
        guard let thumb = which("vipsthumbnail"), let header = which("vipsheader") else { return nil }
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
        // Landlock lets the child execute below /usr only, and bubblewrap shows only /usr:
        // tools elsewhere (resolved through links) run with limits only.
        let underUsr = [thumb, header].allSatisfy { (realPath($0) ?? $0).hasPrefix("/usr/") }
        let bwrap = underUsr ? which("bwrap") : nil
        let confinement: Confinement =
            underUsr && landlockABI >= 1 ? .landlock : (bwrap != nil ? .bubblewrap : .limitsOnly)
        return ThumbnailSandbox(
            vipsthumbnail: thumb, vipsheader: header, bwrap: bwrap, rootLinks: links, confinement: confinement)
    }

    private static func realPath(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }
}

/// A child process to start: the program, its arguments, and its confinement.
struct ChildCommand: Sendable, Equatable {
    var program: String
    var arguments: [String]
    /// Landlock: the paths the child may read and execute below (nil: no Landlock).
    var landlockReadable: [String]?
    /// The seccomp filter (no sockets, no other process, no namespaces).
    var seccomp: Bool

    init(program: String, arguments: [String], landlockReadable: [String]? = nil, seccomp: Bool = false) {
        self.program = program
        self.arguments = arguments
        self.landlockReadable = landlockReadable
        self.seccomp = seccomp
    }
}
