#if canImport(Glibc)
    import Glibc
#endif

/// Starting a `notify_command` process: posix_spawn, never a shell.
enum HookProcess {
    enum SpawnError: Error, CustomStringConvertible {
        case noProgram
        case failed(program: String, errno: Int32)

        var description: String {
            switch self {
            case .noProgram: return "notify_command is empty"
            case let .failed(program, code): return "cannot run \(program): \(String(cString: strerror(code)))"
            }
        }
    }

    /// Signals the daemon ignores or handles itself; a hook gets them back at their
    /// defaults (ignored dispositions survive exec, and a hook deaf to SIGTERM could not
    /// be stopped by its timeout).
    static let signalsReset: [Int32] = [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2]

    /// Starts `command[0]` (searched in PATH if it has no `/`) with `command[1...]` as
    /// arguments and exactly `environment`. The child leads its own process group (so a
    /// timeout can kill whatever it started), reads /dev/null, writes its stdout to
    /// /dev/null, keeps the daemon's stderr (the journal), and inherits no other
    /// descriptor. Returns its pid; the caller must reap it.
    static func spawn(_ command: [String], environment: [String]) throws(SpawnError) -> pid_t {
        guard let program = command.first, !program.isEmpty else { throw .noProgram }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        closeInheritedDescriptors(&actions)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in signalsReset { sigaddset(&defaults, s) }
        var noMask = sigset_t()
        sigemptyset(&noMask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &noMask)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        var pid: pid_t = 0
        let rc = withCStrings(command) { argv in
            withCStrings(environment) { envp in
                posix_spawnp(&pid, program, &actions, &attributes, argv, envp)
            }
        }
        guard rc == 0 else { throw .failed(program: program, errno: rc) }
        return pid
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc 2.34+ has posix_spawn_file_actions_addclosefrom_np, but Swift's Glibc module
    /// does not declare it: looked up at run time.
    private static let addCloseFrom: AddCloseFrom? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        else {
            return nil
        }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()

    /// Sockets, the database and the control socket are the daemon's alone. NIO and
    /// SQLite open theirs close-on-exec, but a hook must not depend on every library
    /// getting that right.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        if let addCloseFrom, addCloseFrom(&actions, 3) == 0 { return }
        // Older C library: close each descriptor open now (listed by the kernel).
        guard let dir = opendir("/proc/self/fd") else { return }
        defer { closedir(dir) }
        let own = dirfd(dir)
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let fd = Int32(name), fd > 2, fd != own else { continue }
            posix_spawn_file_actions_addclose(&actions, fd)
        }
    }

    /// A NULL-terminated array of C strings, valid during `body`.
    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for p in pointers { free(p) } }
        return body(pointers)
    }
}
