import CConfinedSpawn
import Foundation
import NIOCore
import NIOPosix
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon

/// The thumbnail child's command line (rlimits, bubblewrap's view of the file system) and the
/// bounded child runner: a child that overruns its time or its output is killed, and under
/// bubblewrap a child sees its one input file and nothing else of the user's.
final class ThumbnailSandboxTests: XCTestCase {
    private let sandbox = ThumbnailSandbox(
        vipsthumbnail: "/usr/bin/vipsthumbnail", vipsheader: "/usr/bin/vipsheader",
        bwrap: "/usr/bin/bwrap", rootLinks: [("/lib", "usr/lib"), ("/lib64", nil)], confinement: .bubblewrap)

    func testUnderBubblewrapTheInputIsBoundUnderAFixedName() {
        let c = sandbox.thumbnailCommand(input: "/home/u/cat [1].png", quality: 70)
        XCTAssertEqual(c.program, "/usr/bin/bwrap")
        XCTAssertNil(c.landlockReadable)
        XCTAssertFalse(c.seccomp)  // bubblewrap makes namespaces, which the filter refuses
        let bwrap = c.arguments
        for flag in ["--unshare-all", "--die-with-parent", "--new-session"] {
            XCTAssertTrue(bwrap.contains(flag), flag)
        }
        XCTAssertTrue(bwrap.contains(["--cap-drop", "ALL"]))
        XCTAssertTrue(bwrap.contains(["--ro-bind", "/usr", "/usr"]))
        XCTAssertTrue(bwrap.contains(["--symlink", "usr/lib", "/lib"]))
        XCTAssertTrue(bwrap.contains(["--ro-bind", "/lib64", "/lib64"]))
        // The input alone, read-only, under a fixed name; never a writable bind, never / or home.
        XCTAssertTrue(bwrap.contains(["--ro-bind", "/home/u/cat [1].png", "/input"]))
        XCTAssertFalse(bwrap.contains("--bind"))
        XCTAssertFalse(bwrap.contains("--share-net"))
        XCTAssertEqual(bwrap.filter { $0 == "--ro-bind" || $0 == "--ro-bind-try" }.count, 4)
        let tool = try! XCTUnwrap(bwrap.lastIndex(of: "--"))
        XCTAssertEqual(
            Array(bwrap[(tool + 1)...]),
            ["/usr/bin/vipsthumbnail", "/input", "--size", "160x160", "-o", ".jpg[Q=70,strip]"])
        XCTAssertFalse(sandbox.inputOnStdin)
    }

    /// Under Landlock the tool reads its stdin by descriptor: the path (and libvips'
    /// `name[options]` syntax in it) never reaches the child; it may read below /usr only.
    func testUnderLandlockTheToolReadsItsDescriptorAndNeverSeesThePath() {
        var s = sandbox
        s.confinement = .landlock
        let c = s.thumbnailCommand(input: "/var/lib/parley/files/cat [1].png", quality: 70)
        XCTAssertEqual(c.program, "/usr/bin/vipsthumbnail")
        XCTAssertEqual(c.arguments, ["/proc/self/fd/0", "--size", "160x160", "-o", ".jpg[Q=70,strip]"])
        XCTAssertTrue(c.seccomp)
        let readable = try! XCTUnwrap(c.landlockReadable)
        XCTAssertTrue(readable.contains("/usr"))
        for never in ["/", "/etc", "/var", "/var/lib/parley", "/home", "/tmp", "/run", "/proc"] {
            XCTAssertFalse(readable.contains(never), never)
        }
        XCTAssertTrue(s.inputOnStdin)
        s.confinement = .limitsOnly
        let h = s.headerCommand(input: "/home/u/a.png")
        XCTAssertEqual([h.program] + h.arguments, ["/usr/bin/vipsheader", "/proc/self/fd/0"])
        XCTAssertNil(h.landlockReadable)
        XCTAssertTrue(h.seccomp)
    }

    func testTheProbeStepsDownFromLandlockToBubblewrapToLimitsOnly() {
        var s = sandbox
        s.confinement = .landlock
        XCTAssertEqual(s.steppedDown()?.confinement, .bubblewrap)
        XCTAssertEqual(s.steppedDown()?.steppedDown()?.confinement, .limitsOnly)
        XCTAssertNil(s.steppedDown()?.steppedDown()?.steppedDown())
        s.bwrap = nil
        XCTAssertEqual(s.steppedDown()?.confinement, .limitsOnly)
    }

    func testFindPrefersLandlockThenBubblewrapAndToolsOutsideUsrGetLimitsOnly() throws {
        guard access("/usr/bin/vipsthumbnail", X_OK) == 0, access("/usr/bin/bwrap", X_OK) == 0 else {
            throw XCTSkip("the vips tools or bwrap are not installed (scripts/install-deps.sh installs them)")
        }
        XCTAssertEqual(ThumbnailSandbox.find(path: "/usr/bin", landlockABI: 3)?.confinement, .landlock)
        XCTAssertEqual(ThumbnailSandbox.find(path: "/usr/bin", landlockABI: 0)?.confinement, .bubblewrap)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tools-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for tool in ["vipsthumbnail", "vipsheader"] {
            try FileManager.default.copyItem(atPath: "/usr/bin/\(tool)", toPath: "\(dir)/\(tool)")
        }
        let outside = ThumbnailSandbox.find(path: dir + ":/usr/bin", landlockABI: 3)
        XCTAssertEqual(outside?.confinement, .limitsOnly)
        XCTAssertNil(outside?.bwrap)
        // A link to the tool under /usr is the tool under /usr.
        try FileManager.default.removeItem(atPath: dir + "/vipsheader")
        try FileManager.default.removeItem(atPath: dir + "/vipsthumbnail")
        for tool in ["vipsthumbnail", "vipsheader"] {
            try FileManager.default.createSymbolicLink(atPath: "\(dir)/\(tool)", withDestinationPath: "/usr/bin/\(tool)")
        }
        XCTAssertEqual(ThumbnailSandbox.find(path: dir, landlockABI: 3)?.confinement, .landlock)
    }

    func testTheChildsEnvironmentHoldsNothingOfParleyds() {
        XCTAssertEqual(ThumbnailSandbox.environment["VIPS_CONCURRENCY"], "1")
        XCTAssertEqual(ThumbnailSandbox.environment["VIPS_BLOCK_UNTRUSTED"], "1")
        XCTAssertNil(ThumbnailSandbox.environment["HOME"])
        XCTAssertEqual(
            Set(ThumbnailSandbox.environment.keys).subtracting(["PATH", "LANG"]).allSatisfy { $0.hasPrefix("VIPS_") },
            true)
    }

    func testMissingToolsMeanNoThumbnails() {
        XCTAssertNil(ThumbnailSandbox.find(path: "/nonexistent:/also/not"))
        XCTAssertNil(ThumbnailSandbox.find(path: nil))
        XCTAssertNil(ThumbnailSandbox.find(path: "relative/bin:bin"))
    }

    func testAChildPastItsDeadlineIsKilled() {
        let start = ContinuousClock.now
        let r = ChildRun.run(ChildCommand(program: "/bin/sleep", arguments: ["30"]), deadline: start + .milliseconds(200), maxOutput: 10)
        XCTAssertTrue(r.killed)
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5))
    }

    func testAChildWritingTooMuchIsStoppedAtTheBound() {
        let r = ChildRun.run(ChildCommand(program: "/usr/bin/yes", arguments: []), deadline: .now + .seconds(10), maxOutput: 1_000)
        XCTAssertTrue(r.overflowed)
        XCTAssertEqual(r.output.count, 1_000)
    }

    func testAChildSeesNoEnvironmentOfOurs() {
        setenv("PARLEY_SECRET_FOR_TEST", "x", 1)
        let r = ChildRun.run(ChildCommand(program: "/usr/bin/env", arguments: []), deadline: .now + .seconds(10), maxOutput: 4_096)
        XCTAssertEqual(r.status, 0)
        let text = String(decoding: r.output, as: UTF8.self)
        XCTAssertFalse(text.contains("PARLEY_SECRET_FOR_TEST"))
        XCTAssertTrue(text.contains("VIPS_CONCURRENCY=1"))
    }

    /// Under bubblewrap (where it works here) the child reads its input, and not a file
    /// beside it, nor /etc/passwd, nor the network.
    func testUnderBubblewrapTheChildSeesOnlyItsInput() throws {
        guard var found = ThumbnailSandbox.find(path: "/usr/bin:/bin"), found.bwrap != nil else {
            throw XCTSkip("bwrap or the vips tools are not installed")
        }
        found.confinement = .bubblewrap
        let probe = ChildRun.run(
            found.command(tool: "/usr/bin/true", input: nil) { _ in [] }, deadline: .now + .seconds(10), maxOutput: 100)
        guard probe.status == 0 else { throw XCTSkip("bwrap does not work here: \(probe.summary)") }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("thumbs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("in.png").path
        let secret = dir.appendingPathComponent("secret").path
        try Data("picture".utf8).write(to: URL(fileURLWithPath: input))
        try Data("key".utf8).write(to: URL(fileURLWithPath: secret))
        func cat(_ path: String?) -> ChildRun {
            ChildRun.run(
                found.command(tool: "/usr/bin/cat", input: input) { inside in [path ?? inside] },
                deadline: .now + .seconds(10), maxOutput: 4_096)
        }
        XCTAssertEqual(String(decoding: cat(nil).output, as: UTF8.self), "picture")
        for other in [secret, "/etc/passwd", dir.path + "/in.png", "/root/.bashrc"] {
            let r = cat(other)
            XCTAssertNotEqual(r.status, 0, other)
            XCTAssertTrue(r.output.isEmpty, other)
        }
        // No network: only a loopback that is down, no other interface.
        let net = ChildRun.run(
            found.command(tool: "/usr/bin/cat", input: nil) { _ in ["/proc/net/dev"] }, deadline: .now + .seconds(10),
            maxOutput: 4_096)
        let text = String(decoding: net.output, as: UTF8.self)
        XCTAssertFalse(text.contains("eth"), text)
    }
}

/// The child inherits no descriptor of parleyd's (its database, sockets, keys): only
/// stdin, stdout and stderr, even for a descriptor opened without O_CLOEXEC.
final class ThumbnailChildDescriptorTests: XCTestCase {
    func testTheChildInheritsOnlyItsThreeStandardDescriptors() {
        // No O_CLOEXEC, on purpose; at a number ls would not take for its own directory.
        // F_DUPFD takes the lowest FREE number from 77 up. dup2(opened, 77) closed whatever
        // the process held at 77: another test's SQLite file, behind SQLite's back, so its
        // lock stayed in SQLite's table of inodes while the inode was freed, and the next
        // store created on a reused inode number was "locked by another process" (CI, 20:13Z:
        // TrustDriverTests' first set-up, right after this class, waited 1 s and failed).
        let opened = open("/etc/hostname", O_RDONLY)
        let leaky = fcntl(opened, F_DUPFD, 77)
        close(opened)
        XCTAssertGreaterThanOrEqual(leaky, 77)
        defer { close(leaky) }
        let r = ChildRun.run(
            ChildCommand(program: "/usr/bin/find", arguments: ["/proc/self/fd", "-mindepth", "1", "-printf", "%f %l\\n"]),
            deadline: .now + .seconds(10), maxOutput: 4_096)
        XCTAssertEqual(r.status, 0)
        let text = String(decoding: r.output, as: UTF8.self)
        let fds = text.split(separator: "\n").compactMap { Int($0.split(separator: " ").first ?? "") }
        // 0, 1, 2 and the ones find opened itself: the directory it reads, its working directory.
        XCTAssertFalse(fds.contains(Int(leaky)), text)
        XCTAssertEqual(Array(fds.prefix(3)), [0, 1, 2], text)
        XCTAssertTrue(text.contains("0 /dev/null"), text)
        for line in text.split(separator: "\n").dropFirst(3) {
            let cwd = " " + FileManager.default.currentDirectoryPath
            XCTAssertTrue(line.contains(" /proc/") || line.hasSuffix(" /") || line.hasSuffix(cwd), "inherited: \(line)")
        }
    }
}

/// `ThumbnailMaker` runs at most `ThumbnailLimits.concurrent` children at a time, however
/// many pictures are offered at once, and a failing tool means an offer without one.
final class ThumbnailMakerTests: XCTestCase {
    func testManyPicturesAtOnceRunAtMostTwoChildrenAndEachEndsWithoutAThumbnail() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("thumbs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Stands in for vipsheader: notes how many run now, takes a while, fails (its
        // `--version`, the probe, works and is not counted).
        let tool = dir + "/tool"
        try """
        #!/bin/sh
        [ "$1" = --version ] && exit 0
        mkdir "\(dir)/run.$$"
        ls -d "\(dir)"/run.* | wc -l >> "\(dir)/counts"
        sleep 0.2
        rmdir "\(dir)/run.$$"
        exit 1
        """.write(toFile: tool, atomically: true, encoding: .utf8)
        chmod(tool, 0o755)
        let picture = dir + "/picture.png"
        try Data("not really".utf8).write(to: URL(fileURLWithPath: picture))
        let maker = ThumbnailMaker(
            sandbox: ThumbnailSandbox(vipsthumbnail: "/usr/bin/false", vipsheader: tool, confinement: .limitsOnly))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let outcomes = try EventLoopFuture.whenAllSucceed(
            (0..<6).map { _ in maker.make(path: picture, on: loop) }, on: loop
        ).wait()
        for outcome in outcomes {
            guard case .none(let why) = outcome else { return XCTFail("a thumbnail from a failing tool") }
            XCTAssertTrue(why.contains("vipsheader"), why)
        }
        let counts = try String(contentsOfFile: dir + "/counts", encoding: .utf8)
            .split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        XCTAssertEqual(counts.count, 6)
        XCTAssertLessThanOrEqual(counts.max() ?? 0, ThumbnailLimits.concurrent, "\(counts)")
        XCTAssertNotNil(maker.takeAnnouncement())  // limits only: said once
        XCTAssertNil(maker.takeAnnouncement())
    }
}

/// The Landlock + seccomp child (issue 29), for real on this kernel: it reads its input
/// through its descriptor and nothing else of the file system (not a file beside the
/// input, not the daemon's state, not /etc/passwd), writes nowhere, and cannot open a
/// socket of any family, not even to a listener on loopback. The same children unconfined
/// (the state before issue 29 under the shipped unit) read and connect.
final class ThumbnailLandlockTests: XCTestCase {
    private var dir = ""
    private var input = ""
    private var secret = ""

    override func setUpWithError() throws {
        guard pc_landlock_abi() >= 1 else {
            throw XCTSkip("this kernel has no Landlock (CI's has: a skip fails the run)")
        }
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("landlock-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        input = dir + "/in.png"
        secret = dir + "/identity.key"
        try Data("picture".utf8).write(to: URL(fileURLWithPath: input))
        try Data("key".utf8).write(to: URL(fileURLWithPath: secret))
    }

    override func tearDown() {
        if !dir.isEmpty { try? FileManager.default.removeItem(atPath: dir) }
    }

    private func run(_ program: String, _ arguments: [String], confined: Bool) -> ChildRun {
        let fd = open(input, O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        let command = ChildCommand(
            program: program, arguments: arguments,
            landlockReadable: confined ? ThumbnailSandbox.landlockReadable : nil, seccomp: confined)
        return ChildRun.run(command, input: fd, deadline: .now + .seconds(20), maxOutput: 4_096)
    }

    func testTheConfinedChildReadsItsDescriptorAndNothingElse() {
        let own = run("/usr/bin/cat", ["/proc/self/fd/0"], confined: true)
        XCTAssertEqual(own.status, 0, own.summary)
        XCTAssertEqual(String(decoding: own.output, as: UTF8.self), "picture")
        for other in [secret, "/etc/passwd", "/proc/1/environ", "/proc/self/environ"] {
            let r = run("/usr/bin/cat", [other], confined: true)
            XCTAssertNotEqual(r.status, 0, other)
            XCTAssertTrue(r.output.isEmpty, other)
            // Unconfined, the same child reads the key: the test can fail.
            if other == secret {
                XCTAssertEqual(String(decoding: run("/usr/bin/cat", [other], confined: false).output, as: UTF8.self), "key")
            }
        }
        // A script reads it the same way from a child of its own; /dev/null is writable.
        let script = run("/bin/bash", ["-c", "head -c 7 /proc/self/fd/0 && echo done > /dev/null"], confined: true)
        XCTAssertEqual(script.status, 0, script.summary)
        XCTAssertEqual(String(decoding: script.output, as: UTF8.self), "picture")
        let list = run("/usr/bin/ls", [dir], confined: true)
        XCTAssertNotEqual(list.status, 0)
        XCTAssertTrue(list.output.isEmpty)
        let write = run("/usr/bin/touch", [dir + "/dropped"], confined: true)
        XCTAssertNotEqual(write.status, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/dropped"))
    }

    func testTheConfinedChildCannotOpenASocketEvenToALoopbackListener() throws {
        // A listener on loopback that accepts: an unconfined child connects to it.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, len) } }
        XCTAssertEqual(listen(listener, 8), 0)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &len) }
        }
        let port = Int(UInt16(bigEndian: addr.sin_port))
        let connect = ["-c", "exec 3<>/dev/tcp/127.0.0.1/\(port) && echo connected"]
        XCTAssertEqual(String(decoding: run("/bin/bash", connect, confined: false).output, as: UTF8.self), "connected\n")
        let confined = run("/bin/bash", connect, confined: true)
        XCTAssertNotEqual(confined.status, 0)
        XCTAssertTrue(confined.output.isEmpty)
        XCTAssertTrue(confined.errorText.contains("Operation not permitted"), confined.errorText)
        // A Unix socket (the system bus, avahi's, parleyd's control socket) the same way.
        let unix = run("/usr/bin/python3", ["-c", "import socket; socket.socket(socket.AF_UNIX)"], confined: true)
        XCTAssertNotEqual(unix.status, 0)
        XCTAssertTrue(unix.errorText.contains("PermissionError"), unix.errorText)
    }

    /// The real tools under the real confinement make a thumbnail of a real picture, read by
    /// descriptor; a failure to confine is a failed start, never an unconfined child.
    func testVipsThumbnailWorksConfinedAndAFailedConfinementStartsNothing() throws {
        guard let found = ThumbnailSandbox.find(path: "/usr/bin"), found.confinement == .landlock else {
            throw XCTSkip("the vips tools are not installed (scripts/install-deps.sh installs them)")
        }
        // 2x1 RGB PNG.
        let png: [UInt8] = [
            0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
            0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x7B, 0x40, 0xE8, 0xDD, 0x00, 0x00, 0x00,
            0x0E, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0, 0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF,
            0x56, 0xC7, 0x2F, 0x0D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82
        ]
        try Data(png).write(to: URL(fileURLWithPath: input))
        let fd = open(input, O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        let header = ChildRun.run(
            found.headerCommand(input: input), input: fd, deadline: .now + .seconds(20), maxOutput: 4_096)
        XCTAssertEqual(header.status, 0, header.summary)
        XCTAssertTrue(String(decoding: header.output, as: UTF8.self).contains("2x1"), header.summary)
        let thumb = ChildRun.run(
            found.thumbnailCommand(input: input, quality: 70), input: fd, deadline: .now + .seconds(20), maxOutput: 40_000)
        XCTAssertEqual(thumb.status, 0, thumb.summary)
        XCTAssertEqual(ThumbnailPolicy.judge(output: thumb.output), .use)
        // A program Landlock does not let it execute (outside /usr): the start fails, and says where.
        try FileManager.default.copyItem(atPath: "/usr/bin/true", toPath: dir + "/true")
        let outside = ChildRun.run(
            ChildCommand(program: dir + "/true", arguments: [], landlockReadable: ThumbnailSandbox.landlockReadable, seccomp: true),
            deadline: .now + .seconds(20), maxOutput: 100)
        XCTAssertEqual(outside.status, -1)
        XCTAssertTrue(outside.errorText.contains("execve"), outside.errorText)
    }
}
