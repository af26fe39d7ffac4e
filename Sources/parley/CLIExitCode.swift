/// Exit statuses of `parley`, documented in docs/CONTROL.md so scripts can rely on them.
enum CLIExitCode {
    /// The daemon answered with an error, closed the connection, or misbehaved.
    static let daemonError: Int32 = 1
    /// Bad command line (unknown option, missing argument, value out of range).
    static let usage: Int32 = 2
    /// No daemon reachable at the socket path.
    static let cannotConnect: Int32 = 3
}
