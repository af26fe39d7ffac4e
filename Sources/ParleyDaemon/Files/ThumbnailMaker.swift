import CConfinedSpawn
import Foundation
import NIOCore
import ParleyCore
import ParleyNodeCore

/// Makes the thumbnail of a picture the user sends (issue 18): `vipsheader` then
/// `vipsthumbnail` in a child process (`ThumbnailSandbox`: Landlock and seccomp, or
/// bubblewrap, or rlimits and seccomp only, whichever works first here), off the event loop, at most `ThumbnailLimits.concurrent` at a time, each offer
/// waiting at most `ThumbnailLimits.timeout` from the moment it asked. Any failure is an
/// offer without a thumbnail, never a failed send. Only the sender runs this, and only on
/// the user's own outgoing file; a receiver never decodes a thumbnail.
final class ThumbnailMaker: @unchecked Sendable {
    enum Outcome: Sendable {
        case made([UInt8])
        /// Why there is none, for a debug line.
        case none(String)
    }

    /// The daemon's maker, from parleyd's PATH at first use (a PATH without `vipsthumbnail`
    /// turns thumbnails off).
    static let shared = ThumbnailMaker(
        sandbox: ThumbnailSandbox.find(path: ProcessInfo.processInfo.environment["PATH"]))

    private let queue: OperationQueue
    private let lock = NSLock()
    /// Nil: no tools. Its confinement is stepped down by the first probe until one works.
    private var sandbox: ThumbnailSandbox?
    private var probed = false
    /// Said once in the log: how thumbnails are confined, or that there are none.
    private var announcement: String?

    init(sandbox: ThumbnailSandbox?) {
        self.sandbox = sandbox
        queue = OperationQueue()
        queue.name = "parleyd.thumbnails"
        queue.maxConcurrentOperationCount = ThumbnailLimits.concurrent
        if sandbox == nil {
            announcement = "no thumbnails for pictures sent: vipsthumbnail or vipsheader is not on PATH"
        }
    }

    /// The note to log once (nil after it was taken).
    func takeAnnouncement() -> String? {
        lock.withLock {
            defer { announcement = nil }
            return announcement
        }
    }

    /// The thumbnail of the file at `path` (already resolved, the user's own), on `loop`.
    func make(path: String, on loop: EventLoop) -> EventLoopFuture<Outcome> {
        let promise = loop.makePromise(of: Outcome.self)
        let deadline = ContinuousClock.now + ThumbnailLimits.timeout
        queue.addOperation { [self] in
            promise.succeed(run(path: path, deadline: deadline))
        }
        return promise.futureResult
    }

    private func run(path: String, deadline: ContinuousClock.Instant) -> Outcome {
        guard ContinuousClock.now < deadline else { return .none("waited too long behind other pictures") }
        guard let sandbox = probe(deadline: deadline) else { return .none("no thumbnail tools") }
        // The one descriptor the child gets (not under bubblewrap, which binds the path).
        var input: Int32 = -1
        if sandbox.inputOnStdin {
            input = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard input >= 0 else { return .none("cannot open the picture: \(String(cString: strerror(errno)))") }
        }
        defer { if input >= 0 { close(input) } }
        let stdin: Int32? = input >= 0 ? input : nil
        let header = ChildRun.run(
            sandbox.headerCommand(input: path), input: stdin, deadline: deadline,
            maxOutput: ThumbnailLimits.maxHeaderBytes)
        guard header.status == 0, !header.killed else { return .none("vipsheader: \(header.summary)") }
        guard let (w, h) = ThumbnailPolicy.dimensions(fromHeaderLine: String(decoding: header.output, as: UTF8.self))
        else { return .none("vipsheader printed no dimensions") }
        guard ThumbnailPolicy.mayDecode(width: w, height: h) else {
            return .none("\(w)x\(h) pixels is over the \(ThumbnailLimits.maxSourcePixels) decoded for a thumbnail")
        }
        for quality in ThumbnailLimits.qualities {
            let r = ChildRun.run(
                sandbox.thumbnailCommand(input: path, quality: quality), input: stdin, deadline: deadline,
                maxOutput: ThumbnailLimits.maxOutputBytes)
            if r.overflowed { continue }  // over the bound: the lower quality, or none
            guard r.status == 0, !r.killed else { return .none("vipsthumbnail: \(r.summary)") }
            switch ThumbnailPolicy.judge(output: r.output) {
            case .use: return .made(r.output)
            case .notJPEG: return .none("vipsthumbnail's output is not a JPEG")
            case .tooLarge: continue
            }
        }
        return .none("the thumbnail is over \(FileLimits.maxThumbnailBytes) bytes even at the lower quality")
    }

    /// The sandbox, after finding once the most confined way that works here: each step
    /// runs `vipsheader --version` confined; a failure steps down (Landlock, bubblewrap,
    /// limits only) and the log says once which one thumbnails use.
    private func probe(deadline: ContinuousClock.Instant) -> ThumbnailSandbox? {
        lock.lock()
        defer { lock.unlock() }
        guard var s = sandbox else { return nil }
        guard !probed else { return s }
        probed = true
        var failures: [String] = []
        for _ in 0..<3 {
            let r = ChildRun.run(
                s.command(tool: s.vipsheader, input: nil) { _ in ["--version"] }, input: nil, deadline: deadline,
                maxOutput: ThumbnailLimits.maxHeaderBytes)
            if r.status == 0 && !r.killed { break }
            failures.append("\(s.confinement.rawValue): \(r.summary)")
            guard let lower = s.steppedDown() else { break }
            s = lower
        }
        let why = failures.isEmpty ? "" : " (\(failures.joined(separator: "; ")))"
        switch s.confinement {
        case .landlock:
            announcement = "thumbnails are made in a child confined by Landlock (ABI \(pc_landlock_abi())) and seccomp"
        case .bubblewrap:
            announcement = "Landlock is not available here\(why): thumbnails are made under bubblewrap"
        case .limitsOnly:
            announcement =
                "neither Landlock nor bubblewrap works here, or the vips tools are not under /usr\(why): "
                + "thumbnails are made with rlimits and seccomp only"
        }
        sandbox = s
        return s
    }
}

/// One child process, bounded and confined (`ChildCommand`): stdin its input descriptor or
/// /dev/null, the environment `ThumbnailSandbox.environment` only, the rlimits of
/// `ThumbnailSandbox.limits`, stdout read up to a bound (more kills it), stderr kept up to a
/// bound and drained, killed with SIGKILL at the deadline.
struct ChildRun {
    var status: Int32 = -1
    var killed = false
    /// It wrote more than the bound (and was killed for it).
    var overflowed = false
    var output: [UInt8] = []
    var errorText = ""

    var summary: String {
        killed
            ? "killed (timeout or too much output)" : "exit \(status) \(errorText)".trimmingCharacters(in: .whitespaces)
    }

    static func run(
        _ command: ChildCommand, input: Int32? = nil, deadline: ContinuousClock.Instant, maxOutput: Int
    ) -> ChildRun {
        var result = ChildRun()
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        guard Self.pipeCloseOnExec(&outPipe) else {
            result.errorText = "cannot make a pipe"
            return result
        }
        guard Self.pipeCloseOnExec(&errPipe) else {
            close(outPipe[0])
            close(outPipe[1])
            result.errorText = "cannot make a pipe"
            return result
        }
        let spawned = ConfinedSpawn.spawn(command, stdin: input, stdout: outPipe[1], stderr: errPipe[1])
        close(outPipe[1])
        close(errPipe[1])
        defer { close(outPipe[0]) }
        let pid: pid_t
        switch spawned {
        case .success(let p): pid = p
        case .failure(let failure):
            close(errPipe[0])
            result.errorText = "cannot start \(command.program): \(failure)"
            return result
        }
        let state = KillSwitch(pid: pid)
        let remaining = deadline - ContinuousClock.now
        let ms = max(
            0, Int(remaining.components.seconds * 1_000 + remaining.components.attoseconds / 1_000_000_000_000_000))
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(ms)) { state.kill() }
        // stderr on another thread so a child filling it cannot block on a full pipe.
        let errorBytes = ErrorCollector()
        let group = DispatchGroup()
        let errFD = errPipe[0]
        DispatchQueue.global().async(group: group) {
            errorBytes.bytes = Self.readBounded(errFD, max: ThumbnailLimits.maxErrorBytes, drain: true)
            close(errFD)  // here, not by the caller, which may stop waiting for this reader
        }
        let bytes = readBounded(outPipe[0], max: maxOutput, drain: false)
        if bytes.count >= maxOutput {
            result.overflowed = true
            state.kill()
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        state.exited()
        // The child is gone; its stderr ends with it unless something it left holds it open:
        // then the reader is left behind (it ends at that holder's exit) and the text dropped.
        let stderrDone = group.wait(timeout: .now() + .seconds(1)) == .success
        // Exited normally: the low 7 bits are 0 and the code is in the next byte.
        result.status = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : -1
        result.killed = state.didKill
        result.output = bytes
        if stderrDone {
            result.errorText = String(decoding: errorBytes.bytes, as: UTF8.self).filter {
                !$0.isNewline && $0.isASCII
            }
        }
        return result
    }

    /// A pipe whose ends another child (the notify hook's) does not inherit; `pipe2` is not
    /// in Swift's Glibc module, so the flag is set right after.
    static func pipeCloseOnExec(_ fds: inout [Int32]) -> Bool {
        guard pipe(&fds) == 0 else { return false }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return true
    }

    /// Reads up to `max` bytes (stopping there unless `drain`, which reads on to EOF and
    /// throws the rest away).
    static func readBounded(_ fd: Int32, max: Int, drain: Bool) -> [UInt8] {
        var kept: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            if kept.count < max { kept += buf[0..<min(n, max - kept.count)] }
            if kept.count >= max && !drain { break }
        }
        return kept
    }
}

/// Starts a `ChildCommand` through `CConfinedSpawn` (fork, confine, execve): stdin the
/// input descriptor or `/dev/null`, the two pipes as stdout and stderr, every other
/// descriptor closed in the child (a descriptor of parleyd's opened without O_CLOEXEC, a
/// library's, must not reach a decoder of hostile bytes), the rlimits, then Landlock and
/// seccomp where the command asks for them.
enum ConfinedSpawn {
    /// Why a child did not start: the step that failed and its errno.
    struct Failure: Error, CustomStringConvertible {
        var step: String
        var error: Int32
        var description: String { "\(step): \(String(cString: strerror(error)))" }
    }

    static func spawn(_ command: ChildCommand, stdin: Int32?, stdout: Int32, stderr: Int32) -> Result<pid_t, Failure> {
        var step: UnsafePointer<CChar>?
        func failure() -> Failure {
            Failure(step: step.map { String(cString: $0) } ?? "?", error: errno)
        }
        let nullInput = stdin == nil ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1
        defer { if nullInput >= 0 { close(nullInput) } }
        let input = stdin ?? nullInput
        guard input >= 0 else { return .failure(Failure(step: "open /dev/null", error: errno)) }
        var confinement: OpaquePointer?
        if command.seccomp || command.landlockReadable != nil {
            let paths = (command.landlockReadable ?? []).map { strdup($0) }
            defer { paths.forEach { free($0) } }
            confinement = paths.map { UnsafePointer($0) }.withUnsafeBufferPointer { buf in
                pc_confinement_prepare(
                    buf.baseAddress, Int32(buf.count), input, command.landlockReadable == nil ? 0 : 1, &step)
            }
            guard confinement != nil else { return .failure(failure()) }
        }
        defer { pc_confinement_free(confinement) }
        let argv = ([command.program] + command.arguments).map { strdup($0) } + [nil]
        let envp = ThumbnailSandbox.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var limits = ThumbnailSandbox.limits
        let pid = pc_spawn(command.program, argv, envp, input, stdout, stderr, &limits, confinement, &step)
        return pid > 0 ? .success(pid) : .failure(failure())
    }
}

/// Kills the child at most once, and never after it was reaped (its pid may be reused).
private final class KillSwitch: @unchecked Sendable {
    private let lock = NSLock()
    private let pid: Int32
    private var done = false
    private(set) var didKill = false
    init(pid: Int32) { self.pid = pid }
    func kill() {
        lock.withLock {
            guard !done, !didKill else { return }
            didKill = true
            _ = Glibc.kill(pid, SIGKILL)
        }
    }
    func exited() { lock.withLock { done = true } }
}

private final class ErrorCollector: @unchecked Sendable {
    var bytes: [UInt8] = []
}
