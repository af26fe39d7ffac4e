import Foundation
import NIOCore
import ParleyWebCore

#if canImport(Glibc)
    import Glibc
#endif

/// Why `parley web` could not start, with what to do.
public enum WebLaunchError: Error, CustomStringConvertible {
    case portInUse(Int)

    public var description: String {
        switch self {
        case .portInUse(let port):
            return
                "port \(port) on 127.0.0.1 is in use (another parley web?): pick another with --port, or leave it out for any free port"
        }
    }
}

/// `parley web` from start to Ctrl-C: serve, write the open file, print the link, start the
/// browser on the open file, keep the open file's token fresh.
public enum WebLauncher {
    public struct Options: Sendable {
        public var port: Int
        public var controlSocketPath: String
        public var openBrowser: Bool
        public var openFilePath: String?

        public init(port: Int, controlSocketPath: String, openBrowser: Bool, openFilePath: String?) {
            self.port = port
            self.controlSocketPath = controlSocketPath
            self.openBrowser = openBrowser
            self.openFilePath = openFilePath
        }
    }

    /// How often the open file's token is checked: a used token is replaced within this.
    static let openFileCheckInterval = Duration.milliseconds(200)

    public static func run(_ options: Options, say: @escaping @Sendable (String) -> Void) async throws {
        let server = WebServer(options: .init(port: options.port, controlSocketPath: options.controlSocketPath))
        let (ready, readyContinuation) = AsyncStream.makeStream(of: Int.self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // Ends the wait for the port if the server never starts.
                defer { readyContinuation.finish() }
                do {
                    try await server.run { port in readyContinuation.yield(port) }
                } catch let error as IOError where error.errnoCode == EADDRINUSE {
                    throw WebLaunchError.portInUse(options.port)
                }
            }
            var iterator = ready.makeAsyncIterator()
            guard let port = await iterator.next() else {
                // The server ended before it was listening: its error is the answer.
                try await group.next()
                return
            }
            let file = WebOpenFile(
                path: try options.openFilePath
                    ?? WebOpenFile.defaultPath(port: port, environment: ProcessInfo.processInfo.environment))
            var openToken = server.issueLaunchToken()
            try file.write(url: server.loginURL(openToken))
            let printed = server.issueLaunchToken()
            say("Parley web is running at http://127.0.0.1:\(port)/ (Ctrl-C stops it).")
            say("Sign in: \(server.loginURL(printed))")
            say(
                "  That link works once, for \(WebLimits.launchTokenLifetimeSeconds / 60) minutes. For a new one at any time, open"
            )
            say("  file://\(file.path)")
            if options.openBrowser { openBrowser(file: file.path, say: say) }
            group.addTask {
                // Replace the open file's token once it is used, or when half its life is
                // gone, so the file always signs in.
                var issuedAt = ContinuousClock.now
                let refreshAfter = Duration.seconds(WebLimits.launchTokenLifetimeSeconds / 2)
                defer { file.remove() }
                while !Task.isCancelled {
                    try? await Task.sleep(for: openFileCheckInterval)
                    if !server.isUsable(openToken) || ContinuousClock.now - issuedAt > refreshAfter {
                        openToken = server.issueLaunchToken()
                        issuedAt = ContinuousClock.now
                        try? file.write(url: server.loginURL(openToken))
                    }
                }
            }
            // The server ends on SIGINT/SIGTERM; then the open file goes too.
            try await group.next()
            group.cancelAll()
        }
    }

    /// `xdg-open FILE`: the file's path is all that appears on any command line.
    static func openBrowser(file: String, say: @Sendable (String) -> Void) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["xdg-open", "file://" + file]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            say("Could not start a browser (xdg-open: \(error)); open the link above yourself.")
        }
    }
}
