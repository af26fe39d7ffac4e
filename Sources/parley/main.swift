import ArgumentParser
import Foundation

// Entry point. Parses, runs, and maps argument-parser's usage exit status (64, EX_USAGE)
// to 2, the conventional "usage error" status documented in docs/CONTROL.md.
// `parley --socket X whoami`: options every subcommand takes may come before it.
let arguments = GlobalOptionPlacement.hoisted(Array(CommandLine.arguments.dropFirst()), root: ParleyCommand.self)
// Message text and peer names leave the command line other users can read (`ps`).
CommandLineScrub.scrub()
if let unknown = ParleyCommand.unknownSubcommandMessage(arguments) {
    Console.err(unknown)
    exit(CLIExitCode.usage)
}
do {
    var command = try ParleyCommand.parseAsRoot(arguments)
    try command.run()
} catch {
    if ParleyCommand.exitCode(for: error) == .validationFailure {
        Console.err(ParleyCommand.fullMessage(for: error))
        exit(CLIExitCode.usage)
    }
    ParleyCommand.exit(withError: error)
}
