import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where the control socket lives when nobody says otherwise. One function, used by the
/// daemon to bind and by the CLI to connect, so the two cannot disagree.
public enum ControlSocketPath {
    public static let socketFileName = "control.sock"
    /// The system service's socket (`RuntimeDirectory=parley` in parleyd.service), which
    /// members of group parley may use.
    public static let systemService = "/run/parley/control.sock"

    /// Suffix of the descriptor socket's path (docs/CONTROL.md "Descriptor socket").
    public static let descriptorSocketSuffix = ".fds"

    /// The descriptor socket that goes with the control socket at `controlPath`: the same
    /// path with `.fds` appended, so it lives in the same (private) directory and two
    /// daemons with different control sockets never share one.
    public static func descriptorSocket(forControl controlPath: String) -> String {
        controlPath + descriptorSocketSuffix
    }

    /// Where a person's own system-managed instance (`parleyd@NAME.service`,
    /// `RuntimeDirectory=parley-user/%i`) puts its control socket.
    public static let personalInstanceDirectory = "/run/parley-user"

    public static func personalInstance(userName: String) -> String {
        join(join(personalInstanceDirectory, userName), socketFileName)
    }

    /// Where a client looks, in order, when neither `--socket` nor `$PARLEY_SOCKET` says:
    /// the user's own parleyd in their session (`default`), then the person's own instance
    /// (`parleyd@NAME`, `userName` from the password database, not the environment), then
    /// the system service.
    public static func clientCandidates(environment: [String: String], userName: String? = currentUserName())
        -> [String]
    {
        var candidates = [self.default(environment: environment)]
        if let userName, !userName.isEmpty, !userName.contains("/"), !userName.hasPrefix(".") {
            candidates.append(personalInstance(userName: userName))
        }
        candidates.append(systemService)
        var seen = Set<String>()
        return candidates.filter { seen.insert($0).inserted }
    }

    /// The calling user's login name (getpwuid of the real uid), nil if it has none.
    public static func currentUserName() -> String? {
        guard let entry = getpwuid(getuid()) else { return nil }
        return String(cString: entry.pointee.pw_name)
    }

    /// The first candidate that `exists` (something is there, even if this user may not
    /// reach it: the error then says why), else the first: its "no such file" error is
    /// the one to show.
    public static func forClient(
        environment: [String: String], userName: String? = currentUserName(), exists: (String) -> Bool
    ) -> String {
        let candidates = clientCandidates(environment: environment, userName: userName)
        return candidates.first(where: exists) ?? candidates[0]
    }

    /// Whether something is at `path` for `forClient`: a file, or a directory on the way
    /// this user may not search (EACCES: then connecting says "permission denied", which
    /// is the truth, rather than "no such file" at another path).
    public static func somethingIsAt(_ path: String) -> Bool {
        var st = stat()
        if stat(path, &st) == 0 { return true }
        return errno == EACCES
    }

    /// Whether other users than a directory's owner may write to it (group- or
    /// world-writable, sticky or not): anyone who can could put their own socket at a path
    /// there, so parleyd never binds there and clients never connect there.
    public static func othersMayWrite(mode: mode_t) -> Bool {
        mode & (S_IWGRP | S_IWOTH) != 0
    }

    /// The directory of `path` when others may write to it (`othersMayWrite`), else nil
    /// (also when it cannot be looked at: connecting then fails with the system's reason).
    public static func sharedDirectory(of path: String) -> String? {
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let shown = directory.isEmpty ? "/" : directory
        var st = stat()
        guard stat(shown, &st) == 0, othersMayWrite(mode: st.st_mode) else { return nil }
        return shown
    }

    /// `$RUNTIME_DIRECTORY/control.sock` (systemd `RuntimeDirectory=`), else
    /// `$XDG_RUNTIME_DIR/parley/control.sock`, else `<default state dir>/control.sock`.
    /// Unset, empty and relative values count as absent (XDG base directory rules); for
    /// systemd's colon-separated lists the first entry is used.
    public static func `default`(environment: [String: String]) -> String {
        if let runtime = absolute(environment["RUNTIME_DIRECTORY"], firstOfList: true) {
            return join(runtime, socketFileName)
        }
        if let xdgRuntime = absolute(environment["XDG_RUNTIME_DIR"], firstOfList: false) {
            return join(join(xdgRuntime, "parley"), socketFileName)
        }
        return join(defaultStateDirectory(environment: environment), socketFileName)
    }

    /// `$STATE_DIRECTORY` (systemd `StateDirectory=`), else `$XDG_STATE_HOME/parley`, else
    /// `$HOME/.local/state/parley`. Without a usable HOME, the password database's home
    /// directory is used.
    public static func defaultStateDirectory(environment: [String: String]) -> String {
        if let state = absolute(environment["STATE_DIRECTORY"], firstOfList: true) {
            return state
        }
        if let xdgState = absolute(environment["XDG_STATE_HOME"], firstOfList: false) {
            return join(xdgState, "parley")
        }
        let home =
            absolute(environment["HOME"], firstOfList: false)
            ?? FileManager.default.homeDirectoryForCurrentUser.path
        return join(join(join(home, ".local"), "state"), "parley")
    }

    static func absolute(_ value: String?, firstOfList: Bool) -> String? {
        guard var value else { return nil }
        if firstOfList, let colon = value.firstIndex(of: ":") {
            value = String(value[..<colon])
        }
        guard value.hasPrefix("/") else { return nil }
        return value
    }

    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
