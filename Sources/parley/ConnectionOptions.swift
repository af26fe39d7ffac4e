import ArgumentParser
import Foundation
import ParleyControlProtocol

/// Options every subcommand takes: where the daemon is and how to print.
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Control socket of parleyd. Default: $PARLEY_SOCKET, else the user's parleyd "
                + "($RUNTIME_DIRECTORY/control.sock, $XDG_RUNTIME_DIR/parley/control.sock or "
                + "~/.local/state/parley/control.sock), else the system service's /run/parley/control.sock.",
            valueName: "path"))
    var socket: String?

    @Flag(name: .long, help: "Print stable, machine-readable JSON on stdout instead of text.")
    var json = false

    /// `--socket`, else `$PARLEY_SOCKET`, else the user's own daemon's socket if there is
    /// one, else the system service's (`ControlSocketPath.forClient`).
    func socketPath(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        exists: (String) -> Bool = ControlSocketPath.somethingIsAt
    ) -> String {
        if let socket, !socket.isEmpty { return socket }
        if let fromEnvironment = environment["PARLEY_SOCKET"], !fromEnvironment.isEmpty { return fromEnvironment }
        return ControlSocketPath.forClient(environment: environment, exists: exists)
    }

    /// Whether the socket was chosen by the user (flag or environment) rather than looked up.
    func socketGiven(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        !(socket ?? "").isEmpty || !(environment["PARLEY_SOCKET"] ?? "").isEmpty
    }
}
