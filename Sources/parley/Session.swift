import ArgumentParser
import Foundation
import ParleyControlProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// Runs one command's conversation with the daemon and turns failures into a message on
/// stderr plus the documented exit status.
enum Session {
    /// Connects, runs `body`, and reports any `ControlClientError`. `peer` names the peer
    /// the command is about, so error hints can show the exact command to run next.
    static func run(
        _ options: ConnectionOptions, peer: String? = nil, callTimeout: Duration = ControlClient.defaultCallTimeout,
        _ body: (ControlClient) throws -> Void
    ) throws {
        do {
            let client = try ControlClient.connect(path: options.socketPath(), callTimeout: callTimeout)
            defer { client.close() }
            try body(client)
        } catch let error as ControlClientError {
            report(error, options: options, peer: peer)
            throw ExitCode(exitStatus(for: error))
        }
    }

    /// Connects like `run`, reporting a failure the same way; for commands that manage
    /// their connection themselves (`follow` reconnects after a daemon restart).
    static func connect(_ options: ConnectionOptions, peer: String? = nil) throws -> ControlClient {
        do {
            return try ControlClient.connect(path: options.socketPath())
        } catch {
            report(error, options: options, peer: peer)
            throw ExitCode(exitStatus(for: error))
        }
    }

    /// How the socket was found, for the cannot-connect hint.
    static func lookup(_ options: ConnectionOptions) -> SocketLookup {
        let environment = ProcessInfo.processInfo.environment
        return SocketLookup(
            given: options.socketGiven(environment: environment),
            candidates: ControlSocketPath.clientCandidates(environment: environment),
            directory: directory(of: options.socketPath()))
    }

    /// The socket's directory (owner, group, whether its group may enter), nil if this
    /// user cannot look at it.
    static func directory(of path: String) -> SocketDirectory? {
        var st = stat()
        guard stat((path as NSString).deletingLastPathComponent, &st) == 0 else { return nil }
        let owner = getpwuid(st.st_uid).map { String(cString: $0.pointee.pw_name) }
        let group = st.st_gid == 0 ? nil : getgrgid(st.st_gid).map { String(cString: $0.pointee.gr_name) }
        return SocketDirectory(ownerName: owner, groupName: group, groupMayEnter: st.st_mode & S_IXGRP != 0)
    }

    static func exitStatus(for error: ControlClientError) -> Int32 {
        switch error {
        case .cannotConnect, .socketPathTooLong, .sharedSocketDirectory: return CLIExitCode.cannotConnect
        default: return CLIExitCode.daemonError
        }
    }

    /// Human text, or with `--json` one `{"error":{...}}` object; always on stderr.
    static func report(_ error: ControlClientError, options: ConnectionOptions, peer: String?) {
        let hint = ErrorHints.hint(for: error, peer: peer, socket: lookup(options))
        if options.json {
            var members: [String: JSONValue] = ["message": .string(error.description)]
            if case .remote(let remote) = error {
                members["code"] = .int(remote.code)
                members["data"] = remote.data ?? .null
            } else {
                members["code"] = .null
            }
            if let hint { members["hint"] = .string(hint) }
            Console.err(jsonText(.object(["error": .object(members)])))
        } else {
            Console.err("parley: \(Terminal.line(error.description))")
            if let hint { Console.err(hint) }
        }
    }

    private static func jsonText(_ value: JSONValue) -> String {
        guard let bytes = try? ControlJSON.line(value) else { return "{}" }
        return String(decoding: TerminalSafeJSON.escaped(Array(bytes.dropLast())), as: UTF8.self)
    }
}

/// Turns a typed params check into an argument-parser usage error (exit status 2).
func validateForCommandLine<P: ControlCallParams>(_ params: P) throws {
    do {
        try params.validate()
    } catch {
        let prefix = "invalid params: "
        let message = error.message.hasPrefix(prefix) ? String(error.message.dropFirst(prefix.count)) : error.message
        throw ValidationError(message)
    }
}
