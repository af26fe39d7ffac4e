import ArgumentParser

/// `parley`: the command-line client of parleyd's control socket.
struct ParleyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parley",
        abstract: "Chat over the LAN through parleyd, the end-to-end encrypted Parley daemon.",
        discussion: """
            PEER is a display name or a fingerprint prefix of at least 4 characters \
            (dashes ignored). With --json, results go to stdout as one JSON object and \
            errors to stderr as {"error":{...}}. Exit status: 0 success, 1 error from the \
            daemon, 2 usage error, 3 cannot connect to parleyd. See docs/CONTROL.md.
            """,
        subcommands: [
            StatusCommand.self, WhoamiCommand.self, PeersCommand.self, SendCommand.self,
            ReadCommand.self, FollowCommand.self, ConnectCommand.self, TrustCommand.self,
            RotateKeyCommand.self, ChatCommand.self, ExportCommand.self, RoomsCommand.self, RoomCommand.self,
            ReplyCommand.self, EditCommand.self, DeleteCommand.self, ReactCommand.self, PresenceCommand.self,
        ])
}
