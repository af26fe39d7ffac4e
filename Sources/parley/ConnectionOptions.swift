import ArgumentParser
import Foundation
import ParleyControlProtocol

/// Options every subcommand takes: where the daemon is and how to print.
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Control socket of parleyd. Default: $PARLEY_SOCKET, else $RUNTIME_DIRECTORY/control.sock, "
                + "$XDG_RUNTIME_DIR/parley/control.sock or ~/.local/state/parley/control.sock.",
            valueName: "path"))
    var socket: String?

    @Flag(name: .long, help: "Print stable, machine-readable JSON on stdout instead of text.")
    var json = false

    /// `--socket`, else `$PARLEY_SOCKET`, else the path the daemon binds by default.
    func socketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let socket, !socket.isEmpty { return socket }
        if let fromEnvironment = environment["PARLEY_SOCKET"], !fromEnvironment.isEmpty { return fromEnvironment }
        return ControlSocketPath.default(environment: environment)
    }
}
