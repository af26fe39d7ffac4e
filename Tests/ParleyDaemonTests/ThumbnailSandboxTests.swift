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
        prlimit: "/usr/bin/prlimit", vipsthumbnail: "/usr/bin/vipsthumbnail", vipsheader: "/usr/bin/vipsheader",
        bwrap: "/usr/bin/bwrap", rootLinks: [("/lib", "usr/lib"), ("/lib64", nil)])

    func testTheCommandSetsEveryRlimitThenSandboxesTheTool() {
        let (program, args) = sandbox.thumbnailCommand(input: "/home/u/cat [1].png", quality: 70)
        XCTAssertEqual(program, "/usr/bin/prlimit")
        let dashes = try! XCTUnwrap(args.firstIndex(of: "--"))
        XCTAssertEqual(
            Array(args[..<dashes]),
            [
                "--cpu=\(ThumbnailLimits.cpuSeconds)", "--as=\(ThumbnailLimits.addressSpaceBytes)",
                "--fsize=\(ThumbnailLimits.fileSizeBytes)", "--nofile=\(ThumbnailLimits.openFiles)", "--core=0"
            ])
        XCTAssertEqual(args[dashes + 1], "/usr/bin/bwrap")
        let bwrap = Array(args[(dashes + 2)...])
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
    }

    func testWithoutBubblewrapTheToolRunsUnderRlimitsOnTheRealPath() {
        var s = sandbox
        s.bwrap = nil
        let (program, args) = s.headerCommand(input: "/home/u/a.png")
        XCTAssertEqual(program, "/usr/bin/prlimit")
        XCTAssertEqual(Array(args.suffix(3)), ["--", "/usr/bin/vipsheader", "/home/u/a.png"])
        XCTAssertFalse(args.contains("/usr/bin/bwrap"))
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
        let r = ChildRun.run(("/bin/sleep", ["30"]), deadline: start + .milliseconds(200), maxOutput: 10)
        XCTAssertTrue(r.killed)
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5))
    }

    func testAChildWritingTooMuchIsStoppedAtTheBound() {
        let r = ChildRun.run(("/usr/bin/yes", []), deadline: .now + .seconds(10), maxOutput: 1_000)
        XCTAssertTrue(r.overflowed)
        XCTAssertEqual(r.output.count, 1_000)
    }

    func testAChildSeesNoEnvironmentOfOurs() {
        setenv("PARLEY_SECRET_FOR_TEST", "x", 1)
        let r = ChildRun.run(("/usr/bin/env", []), deadline: .now + .seconds(10), maxOutput: 4_096)
        XCTAssertEqual(r.status, 0)
        let text = String(decoding: r.output, as: UTF8.self)
        XCTAssertFalse(text.contains("PARLEY_SECRET_FOR_TEST"))
        XCTAssertTrue(text.contains("VIPS_CONCURRENCY=1"))
    }

    /// Under bubblewrap (where it works here) the child reads its input, and not a file
    /// beside it, nor /etc/passwd, nor the network.
    func testUnderBubblewrapTheChildSeesOnlyItsInput() throws {
        guard let found = ThumbnailSandbox.find(path: "/usr/bin:/bin"), found.bwrap != nil else {
            throw XCTSkip("bwrap or the vips tools are not installed")
        }
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
        let opened = open("/etc/hostname", O_RDONLY)
        let leaky = dup2(opened, 77)
        close(opened)
        XCTAssertEqual(leaky, 77)
        defer { close(leaky) }
        let r = ChildRun.run(
            ("/usr/bin/find", ["/proc/self/fd", "-mindepth", "1", "-printf", "%f %l\\n"]),
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
        // Stands in for prlimit: notes how many run now, takes a while, fails.
        let tool = dir + "/tool"
        try """
        #!/bin/sh
        mkdir "\(dir)/run.$$"
        ls -d "\(dir)"/run.* | wc -l >> "\(dir)/counts"
        sleep 0.2
        rmdir "\(dir)/run.$$"
        exit 1
        """.write(toFile: tool, atomically: true, encoding: .utf8)
        chmod(tool, 0o755)
        let maker = ThumbnailMaker(
            sandbox: ThumbnailSandbox(prlimit: tool, vipsthumbnail: "/usr/bin/false", vipsheader: "/usr/bin/false"))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let outcomes = try EventLoopFuture.whenAllSucceed(
            (0..<6).map { _ in maker.make(path: "/nonexistent.png", on: loop) }, on: loop
        ).wait()
        for outcome in outcomes {
            guard case .none(let why) = outcome else { return XCTFail("a thumbnail from a failing tool") }
            XCTAssertTrue(why.contains("vipsheader"), why)
        }
        let counts = try String(contentsOfFile: dir + "/counts", encoding: .utf8)
            .split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        XCTAssertEqual(counts.count, 6)
        XCTAssertLessThanOrEqual(counts.max() ?? 0, ThumbnailLimits.concurrent, "\(counts)")
        XCTAssertNotNil(maker.takeAnnouncement())  // no bwrap: said once
        XCTAssertNil(maker.takeAnnouncement())
    }
}
