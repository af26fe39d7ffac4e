import ArgumentParser

/// `parley --socket X whoami`: the options every subcommand takes (`ConnectionOptions`)
/// may be typed before the subcommand, as people type them. Argument-parser only knows
/// them after the subcommand (each subcommand owns its `@OptionGroup`), so they are moved
/// there, right after the whole subcommand path (`parley --json room accept` becomes
/// `parley room accept --json`) and before anything else, so a `--` or a message text
/// after the subcommand never swallows them. Pure.
enum GlobalOptionPlacement {
    /// `ConnectionOptions` options that take a value.
    static let optionsWithValue: Set<String> = ["--socket"]
    /// `ConnectionOptions` flags.
    static let flags: Set<String> = ["--json"]

    /// `arguments` without the program name, with leading global options moved after the
    /// subcommand path of `root`; unchanged when there is nothing to move, when something
    /// else (`--help`, `--version`, an unknown option) comes before the subcommand, or when
    /// no subcommand follows (argument-parser then reports the problem itself).
    static func hoisted(_ arguments: [String], root: any ParsableCommand.Type) -> [String] {
        var globals: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex, arguments[index].hasPrefix("-") {
            let argument = arguments[index]
            if flags.contains(argument) {
                globals.append(argument)
                index += 1
            } else if optionsWithValue.contains(argument), index + 1 < arguments.endIndex {
                globals += arguments[index...index + 1]
                index += 2
            } else if let equals = argument.firstIndex(of: "="),
                optionsWithValue.contains(String(argument[..<equals]))
            {
                globals.append(argument)
                index += 1
            } else {
                return arguments
            }
        }
        guard !globals.isEmpty else { return arguments }
        var command = root
        var pathEnd = index
        while pathEnd < arguments.endIndex, let sub = subcommand(of: command, named: arguments[pathEnd]) {
            command = sub
            pathEnd += 1
        }
        guard pathEnd > index else { return arguments }
        return Array(arguments[index..<pathEnd]) + globals + Array(arguments[pathEnd...])
    }

    private static func subcommand(of command: any ParsableCommand.Type, named name: String)
        -> (any ParsableCommand.Type)?
    {
        command.configuration.subcommands.first { sub in
            sub._commandName == name || sub.configuration.aliases.contains(name)
        }
    }
}
