import ArgumentParser
import ParleyControlProtocol
import ParleyCore

/// `parley`: the command-line client of parleyd's control socket.
struct ParleyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley",
        abstract: "Chat over the LAN through parleyd, the end-to-end encrypted Parley daemon.",
        discussion: """
            PEER is a display name or a fingerprint prefix of at least 4 characters \
            (dashes ignored); #ROOM names a room. parley finds parleyd's control socket at --socket, \
            $PARLEY_SOCKET, the user's own parleyd, else the system service's /run/parley/control.sock \
            (members of group parley). With --json, results go to stdout as one JSON object and \
            errors to stderr as {"error":{...}}. Exit status: 0 success, 1 error from the \
            daemon, 2 usage error, 3 cannot connect to parleyd. See docs/CONTROL.md.
            """,
        version: ProtocolVersion.versionText(package: ParleyVersion.string),
        subcommands: [
            StatusCommand.self, WhoamiCommand.self, PeersCommand.self, SendCommand.self,
            ReadCommand.self, FollowCommand.self, ConnectCommand.self, TrustCommand.self,
            RotateKeyCommand.self, ChatCommand.self, ExportCommand.self, RoomsCommand.self, RoomCommand.self,
            ForgetMessagesCommand.self,
            SearchCommand.self,
            ReplyCommand.self, EditCommand.self, DeleteCommand.self, ReactCommand.self, PresenceCommand.self,
            FilesCommand.self, GetCommand.self,
            DoctorCommand.self, WebCommand.self, NotifyCommand.self
        ])

    /// `parley sned`: the message for a subcommand that does not exist, with the closest
    /// one; nil when `arguments` (without the program name) start with a known one.
    static func unknownSubcommandMessage(_ arguments: [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-") else { return nil }
        let names = configuration.subcommands.map { $0._commandName } + ["help"]
        guard !names.contains(first) else { return nil }
        var message = "parley: unknown command '\(Terminal.line(first))'."
        if let close = CommandSuggestion.suggest(first, among: names) { message += " Did you mean `parley \(close)`?" }
        return message + "\nRun `parley --help` for the list of commands."
    }
}
