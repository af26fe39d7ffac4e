/// Why a control client call failed. Each description tells the user what to do.
public enum ControlClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No daemon listening at `path` (or no permission); `reason` is the system's wording.
    case cannotConnect(path: String, reason: String)
    /// The socket path does not fit in `sockaddr_un`.
    case socketPathTooLong(path: String, maxBytes: Int)
    /// The socket's directory can be written by other users (`ControlSocketPath.othersMayWrite`):
    /// whoever answers there may be another user's program, not parleyd; not connected.
    case sharedSocketDirectory(path: String, directory: String)
    /// The daemon did not answer within the timeout.
    case timedOut(seconds: Double)
    /// The daemon closed the connection.
    case connectionClosed
    /// The daemon sent something that is not valid protocol.
    case protocolViolation(String)
    /// Reading or writing the socket failed.
    case io(operation: String, reason: String)
    /// The daemon answered with an error.
    case remote(JSONRPCError)

    public var description: String {
        switch self {
        case .cannotConnect(let path, let reason):
            return "cannot connect to parleyd at \(path): \(reason)"
        case .socketPathTooLong(let path, let max):
            return "socket path \(path) is longer than \(max) bytes; use a shorter --socket path"
        case .sharedSocketDirectory(let path, let directory):
            return "not connecting to \(path): other users can write to \(directory), so whatever answers there "
                + "may be another user's program and not your parleyd (it would read what you send); parleyd never "
                + "puts its socket in such a directory: use its own socket (the default, or --socket in a directory "
                + "only its owner can write to)"
        case .timedOut(let seconds):
            return "parleyd did not answer within \(seconds) s; check that it is healthy (`journalctl -u parleyd`)"
        case .connectionClosed:
            return "parleyd closed the connection (was it stopped or restarted?)"
        case .protocolViolation(let detail):
            return "parleyd sent an invalid reply (\(detail)); are the CLI and daemon the same version?"
        case .io(let operation, let reason):
            return "control socket \(operation) failed: \(reason)"
        case .remote(let error):
            return error.message
        }
    }
}
