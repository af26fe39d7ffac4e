import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The file rows' reference program (issue 32): OpenSSH's sftp putting the same file over
/// loopback with the same AEAD as Parley's transport (`chacha20-poly1305@openssh.com`), durably
/// (`put -f`: the server calls fsync when the file is written, as Parley's receiver syncs
/// before `file.completed`), to an sshd the bench starts itself: its own host key, client key
/// and configuration in a temporary directory, listening on a free loopback port, stopped by
/// its pid. The system's sshd is never started, configured or signalled.
struct SftpReference {
    struct Measured {
        let mbps: Double
        /// User + system time of sftp, ssh and every sshd process of the transfer.
        let cpuSeconds: Double
    }

    static let cipher = "chacha20-poly1305@openssh.com"
    /// sshd needs this before it listens (it logs "Server listening on"); a slower start is a
    /// broken installation.
    static let startSeconds = 15.0
    /// The listener reaps a finished session's process at once; this bounds the wait for it.
    static let reapSeconds = 10.0

    let workDir: String

    struct Tools {
        let sshd: String
        let sftp: String
        let keygen: String
    }

    /// The programs, or why the reference cannot run.
    static func tools() -> Result<Tools, BenchError> {
        // Debian's sshd is /usr/sbin/sshd; it must be run by an absolute path (it re-executes itself).
        guard let sshd = findExecutable("sshd"), let sftp = findExecutable("sftp"),
            let keygen = findExecutable("ssh-keygen")
        else { return .failure(.unavailable("sshd, sftp or ssh-keygen not installed (scripts/install-deps.sh bench)")) }
        return .success(Tools(sshd: sshd, sftp: sftp, keygen: keygen))
    }

    /// Puts `source` (`size` bytes) through a fresh sshd and returns the rate from sftp's start
    /// (connection, key exchange and authentication included) to its exit after the fsync.
    func transfer(source: String, size: Int, timeout: Double) throws(BenchError) -> Measured {
        let tools = try Self.tools().get()
        let dir = workDir + "/sftp"
        try? FileManager.default.removeItem(atPath: dir)
        do {
            try FileManager.default.createDirectory(
                atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch { throw .io("cannot create \(dir): \(error)") }
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for key in ["host_key", "client_key"] {
            let (status, out) = try runToCompletion(
                tools.keygen, ["-q", "-t", "ed25519", "-N", "", "-C", "parley-bench", "-f", dir + "/" + key],
                timeout: 30)
            guard status == 0 else { throw .process("ssh-keygen failed: \(out)") }
        }
        do {
            try FileManager.default.copyItem(atPath: dir + "/client_key.pub", toPath: dir + "/authorized_keys")
        } catch { throw .io("cannot write authorized_keys: \(error)") }
        // As root, sshd insists on its (compiled-in, empty) privilege separation directory, which
        // the package's service unit would otherwise create at boot.
        if getuid() == 0 && !FileManager.default.fileExists(atPath: "/run/sshd") {
            mkdir("/run/sshd", 0o755)
        }
        let port = try freeLoopbackPort()
        let user = String(cString: getpwuid(getuid()).pointee.pw_name)
        let config = dir + "/sshd_config"
        let text = """
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(dir)/host_key
            PidFile none
            AuthorizedKeysFile \(dir)/authorized_keys
            AllowUsers \(user)
            PubkeyAuthentication yes
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PermitRootLogin prohibit-password
            UsePAM no
            StrictModes no
            Ciphers \(Self.cipher)
            Compression no
            Subsystem sftp internal-sftp

            """
        guard FileManager.default.createFile(atPath: config, contents: Data(text.utf8)) else {
            throw .io("cannot write \(config)")
        }
        let dest = workDir + "/sftp-received.bin"
        unlink(dest)
        defer { unlink(dest) }
        let batch = dir + "/batch"
        guard FileManager.default.createFile(atPath: batch, contents: Data("put -f \(source) \(dest)\n".utf8)) else {
            throw .io("cannot write \(batch)")
        }

        let before = Self.childrenCPUSeconds()
        // Spawned and reaped here, not through Foundation's Process: sshd closes every inherited
        // descriptor at start, which Foundation takes for its exit, and its process monitor
        // then blocks in waitpid on sshd, so no other child's exit (sftp's) is ever noticed.
        let sshd = try Spawned(
            tools.sshd, ["-D", "-e", "-f", config], output: dir + "/sshd.log")
        defer { sshd.stop() }
        let ready = Deadline(seconds: Self.startSeconds)
        while !((try? String(contentsOfFile: dir + "/sshd.log", encoding: .utf8)) ?? "").contains(
            "Server listening on")
        {
            guard sshd.exitStatus() == nil, !ready.passed else {
                throw .process("sshd did not start: \(Self.tail(dir + "/sshd.log"))")
            }
            Clock.sleep(milliseconds: 20)
        }
        let t0 = Clock.nowNs()
        let sftp = try Spawned(
            tools.sftp,
            [
                "-q", "-b", batch, "-F", "/dev/null", "-i", dir + "/client_key", "-P", "\(port)", "-c", Self.cipher,
                "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "BatchMode=yes", "\(user)@127.0.0.1"
            ], output: dir + "/sftp.log")
        let finished = Deadline(seconds: timeout)
        var status = sftp.exitStatus()
        while status == nil && !finished.passed {
            Clock.sleep(milliseconds: 5)
            status = sftp.exitStatus()
        }
        let seconds = Double(Clock.nowNs() - t0) / 1e9
        guard let status else {
            sftp.stop()
            throw .timedOut("sftp ran longer than \(Int(timeout)) s")
        }
        guard status == 0 else {
            throw .process(
                "sftp exited \(status): \(Self.tail(dir + "/sftp.log")); sshd: \(Self.tail(dir + "/sshd.log"))")
        }
        let got = (try? FileManager.default.attributesOfItem(atPath: dest)[.size] as? Int) ?? nil
        guard got == size else { throw .protocolError("sftp wrote \(got ?? -1) of \(size) bytes") }
        // The session's process must be reaped by the listener (its CPU time then counts in the
        // listener's, and so in ours once the listener is reaped) before the listener is stopped.
        let reaped = Deadline(seconds: Self.reapSeconds)
        while Self.hasChildren(sshd.pid) && !reaped.passed { Clock.sleep(milliseconds: 10) }
        sshd.stop()
        return Measured(mbps: Double(size) / seconds / 1e6, cpuSeconds: Self.childrenCPUSeconds() - before)
    }

    static func tail(_ path: String) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(5).joined(separator: " / ")
    }

    /// User + system time of every reaped child and their reaped descendants.
    static func childrenCPUSeconds() -> Double {
        var u = rusage()
        getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &u)
        func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return s(u.ru_utime) + s(u.ru_stime)
    }

    static func hasChildren(_ pid: Int32) -> Bool {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8) else {
            return false
        }
        return !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
    }
}

/// A program started with posix_spawn, its output to a file, reaped with waitpid by its pid.
private final class Spawned {
    let pid: pid_t
    private var status: Int32?

    init(_ path: String, _ arguments: [String], output: String) throws(BenchError) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([path] + arguments).map { strdup($0) }
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, argv + [nil], environ)
        guard rc == 0 else { throw .process("cannot start \(path): \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    /// The exit status once the program has ended (and was reaped), nil while it runs.
    func exitStatus() -> Int32? {
        if let status { return status }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
        // Exited: its code; killed: 128 + the signal, as a shell reports it.
        status = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
        return status
    }

    /// SIGTERM, then SIGKILL after the grace period; reaped either way. Idempotent.
    func stop() {
        guard exitStatus() == nil else { return }
        kill(pid, SIGTERM)
        let deadline = Deadline(seconds: ChildProcess.stopGraceSeconds)
        while exitStatus() == nil && !deadline.passed { Clock.sleep(milliseconds: 10) }
        if exitStatus() == nil {
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            waitpid(pid, &raw, 0)
            status = 128 + SIGKILL
        }
    }
}
