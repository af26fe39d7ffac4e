import ParleyControlProtocol
import ParleyCore

/// Checks on single option values, shared by the config file (which reports the line)
/// and by `validate()` (which also covers values that came from flags). Each returns a
/// human-readable problem, or nil when the value is fine.
extension DaemonConfiguration {
    static func problem(withName name: String) -> String? {
        if name.isEmpty || name.allSatisfy(\.isWhitespace) { return "must not be empty" }
        if name.utf8.count > maxNameBytes { return "is longer than \(maxNameBytes) bytes" }
        if name.unicodeScalars.contains(where: TextEscaping.isInvisibleControl) {
            return "must not contain control characters"
        }
        // Others could not tell "bob " from "bob" (issue 29): no blank at either end, no
        // run of them, no invisible character.
        if let problem = BlankCharacters.problem(inOwnName: name) { return problem }
        return nil
    }

    static func problem(withHostName hostName: String) -> String? {
        do {
            let parsed = try HostPort(host: hostName, port: 0)
            return parsed.kind == .hostName ? nil : "must be a host name, not an IP address"
        } catch {
            return error.description
        }
    }

    static func problem(withPath path: String) -> String? {
        if !path.hasPrefix("/") { return "must be an absolute path (starting with '/')" }
        if path.utf8.contains(0) { return "must not contain a NUL byte" }
        if path.utf8.count > maxPathBytes { return "is longer than \(maxPathBytes) bytes" }
        return nil
    }

    static func problem(withSocketPath path: String) -> String? {
        if let problem = problem(withPath: path) { return problem }
        if path.utf8.count > maxSocketPathBytes {
            return "is longer than \(maxSocketPathBytes) bytes, the limit for a Unix socket path"
        }
        return nil
    }

    static func problem(withNotifyCommand command: [String]) -> String? {
        guard let program = command.first, !program.isEmpty else {
            return "must name a program as its first element (remove the key to disable notifications)"
        }
        // execve cannot pass a NUL inside an argument.
        if command.contains(where: { $0.utf8.contains(0) }) { return "must not contain a NUL byte" }
        return nil
    }

    static func problem(withListen addresses: [HostPort]) -> String? {
        addresses.isEmpty ? "must list at least one address to listen on" : nil
    }

    static func problem(withTimerMilliseconds value: Int) -> String? {
        timerRangeMilliseconds.contains(value)
            ? nil
            : "must be between \(timerRangeMilliseconds.lowerBound) and \(timerRangeMilliseconds.upperBound) milliseconds"
    }

    /// Checks every option and the relations between them. `merged(defaults:file:flags:)`
    /// calls this; call it yourself after building a configuration by other means.
    public func validate() throws(ConfigError) {
        let checks: [(ConfigKey, String?)] = [
            (.stateDir, Self.problem(withPath: stateDirectory)),
            (.name, Self.problem(withName: name)),
            (.hostName, Self.problem(withHostName: hostName)),
            (.listen, Self.problem(withListen: listen)),
            (.socket, socketPath.flatMap(Self.problem(withSocketPath:))),
            (.networkKey, networkKeyPath.flatMap(Self.problem(withPath:))),
            (.notifyCommand, notifyCommand.flatMap(Self.problem(withNotifyCommand:))),
            (.handshakeTimeoutMs, Self.problem(withTimerMilliseconds: handshakeTimeoutMilliseconds)),
            (.pingIntervalMs, Self.problem(withTimerMilliseconds: pingIntervalMilliseconds)),
            (.deadAfterMs, Self.problem(withTimerMilliseconds: deadAfterMilliseconds))
        ]
        for (key, problem) in checks {
            if let problem { throw .invalidSetting(key: key.rawValue, reason: problem) }
        }
        // No order between ping_interval_ms and dead_after_ms: dead_after_ms bounds how long
        // one ping may stay unanswered (and the kernel keepalive), not a silence that must
        // outlast several pings (docs/PROTOCOL.md "Liveness").
    }
}
