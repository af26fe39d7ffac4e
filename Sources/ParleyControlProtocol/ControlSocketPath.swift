import Foundation

/// Where the control socket lives when nobody says otherwise. One function, used by the
/// daemon to bind and by the CLI to connect, so the two cannot disagree.
public enum ControlSocketPath {
    public static let socketFileName = "control.sock"

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
        let home = absolute(environment["HOME"], firstOfList: false)
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
