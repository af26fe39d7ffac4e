import ArgumentParser
import Foundation
import ParleyControlProtocol
import ParleyWeb
import ParleyWebCore

/// `parley web`: the chat in a browser tab. A client of the control socket like every other
/// subcommand (it runs with the person's own permissions on it); the server listens on
/// 127.0.0.1 only. docs/WEB.md.
struct WebCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "web",
        abstract: "Chat in your browser: serve Parley's web page on 127.0.0.1 and open it.",
        discussion: """
            Prints a sign-in link (its secret is in the part after #, which the browser never \
            sends to a server) and opens the browser on a private sign-in file that holds it, \
            so no secret appears on a command line. The page checks that the server knows the \
            secret before it sends anything. Runs until Ctrl-C. See docs/WEB.md.
            """)

    @OptionGroup var options: ConnectionOptions

    @Option(name: .long, help: "Port on 127.0.0.1 (default: any free port).")
    var port: Int = 0

    @Flag(name: .long, help: "Do not start a browser; only print the link.")
    var noOpen = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Where to keep the sign-in file (default: $XDG_RUNTIME_DIR/parley/web.html).", valueName: "path"))
    var openFile: String?

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0...65535") }
    }

    func run() throws {
        // Fail now, with the usual hints, if the daemon is not there.
        try Session.run(options) { client in _ = try client.call(NodeStatusParams()) }
        let launch = WebLauncher.Options(
            port: port, controlSocketPath: options.socketPath(), openBrowser: !noOpen, openFilePath: openFile)
        let outcome = BlockingTask.run { try await WebLauncher.run(launch) { Console.out($0) } }
        if case .failure(let error) = outcome {
            Console.err("parley: web: \(error)")
            throw ExitCode(CLIExitCode.daemonError)
        }
    }
}

/// Runs async work to completion from the synchronous command (the CLI's entry point is
/// synchronous; only `parley web` needs the concurrency runtime).
enum BlockingTask {
    static func run(_ work: @escaping @Sendable () async throws -> Void) -> Result<Void, any Error> {
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox()
        Task {
            do { try await work() } catch { box.set(.failure(error)) }
            done.signal()
        }
        done.wait()
        return box.get()
    }

    final class ResultBox: @unchecked Sendable {
        private let lock = NSLock()
        private var result: Result<Void, any Error> = .success(())
        func set(_ value: Result<Void, any Error>) { lock.withLock { result = value } }
        func get() -> Result<Void, any Error> { lock.withLock { result } }
    }
}
