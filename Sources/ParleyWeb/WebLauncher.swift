import Foundation
import NIOCore
import ParleyWebCore

#if canImport(Glibc)
    import Glibc
#endif

/// Why `parley web` could not start, with what to do.
public enum WebLaunchError: Error, CustomStringConvertible {
    case portInUse(Int)
    case alreadyRunning(signInFile: String)

    public var description: String {
        switch self {
        case .portInUse(let port):
            return
                "port \(port) on 127.0.0.1 is in use (another parley web, or another program): pick another with --port, or leave it out for any free port"
        case .alreadyRunning(let file):
            return
                "your parley web is already running: open file://\(file) in your browser to sign in (or stop it first: systemctl --user stop parley-web)"
        }
    }
}

/// `parley web` from start to Ctrl-C: claim the sign-in file (removing a stale one before
/// anything else, so it survives no failed start), serve, write the sign-in file, print
/// the link, start the browser on the sign-in file.
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

    public static func run(_ options: Options, say: @escaping @Sendable (String) -> Void) async throws {
        if let chosen = options.openFilePath { try WebOpenFile.checkParentNotShared(chosen) }
        let file = WebOpenFile(
            path: try options.openFilePath
                ?? WebOpenFile.defaultPath(environment: ProcessInfo.processInfo.environment))
        // Held while this runs; a sign-in file found without its lock held is an earlier
        // run's, which died: removed now, before binding, so a failed start (the port taken
        // by someone else) never leaves it pointing at a server that is not ours.
        guard let claim = WebOpenFile.Claim(file) else { throw WebLaunchError.alreadyRunning(signInFile: file.path) }
        defer { claim.release() }
        file.remove()
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
            defer { file.remove() }
            try file.write(port: port, secret: server.key.secret)
            say("Parley web is running at http://127.0.0.1:\(port)/ (Ctrl-C stops it).")
            say("Sign in: \(server.signInURL())")
            say("  The link signs a tab in while this parley web runs: keep it to yourself. It is also in")
            say("  file://\(file.path)")
            if options.openBrowser { openBrowser(file: file.path, say: say) }
            // The server ends on SIGINT/SIGTERM; then the sign-in file goes too.
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
