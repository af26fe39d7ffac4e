import ArgumentParser
import ParleyControlProtocol

/// `parley rooms`: the rooms this node knows, as a table.
struct RoomsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rooms", abstract: "List rooms: name, id, unread and undelivered messages, members.")

    /// Widest room name shown in the table; longer names are cut with "…" (JSON has them whole).
    static let maxNameColumn = 24

    @OptionGroup var options: ConnectionOptions

    func run() throws {
        try Session.run(options) { client in
            let list = try client.call(RoomsListParams())
            if options.json { return Console.json(list) }
            guard !list.rooms.isEmpty else {
                Console.out("No rooms yet. Start one with `parley room create NAME PEER...`.")
                return
            }
            var rows = [["ROOM", "ID", "UNREAD", "QUEUED", "MEMBERS"]]
            for room in list.rooms {
                rows.append([
                    "#" + HumanFormat.truncated(Terminal.line(room.name), to: Self.maxNameColumn),
                    String(room.id.prefix(8)),
                    String(room.unread),
                    String(room.queued),
                    room.member ? HumanFormat.roomMembers(room) : "(you left or were removed)",
                ])
            }
            HumanFormat.table(rows).forEach(Console.out)
        }
    }
}

/// `parley room`: create a room, add or remove members, leave.
struct RoomCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "room",
        abstract: "Create a room, add or remove members, or leave a room.",
        discussion: """
            ROOM is #NAME, NAME, or an id prefix of at least 4 hex digits (quote #NAME in a \
            shell). Any member may add or remove members; every member's daemon applies the \
            signed change. Send with `parley send '#NAME' TEXT`, read with `parley read '#NAME'`.
            """,
        subcommands: [RoomCreateCommand.self, RoomAddCommand.self, RoomRemoveCommand.self, RoomLeaveCommand.self])
}

/// Prints a room after a change.
private func report(_ result: RoomResult, json: Bool, _ headline: String) {
    if json { return Console.json(result) }
    Console.out(headline)
    Console.out("  members: \(HumanFormat.roomMembers(result.room))")
}

struct RoomCreateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create", abstract: "Create a room with you and the given peers as members.")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The room's name (1-64 bytes, without '#').")
    var name: String

    @Argument(help: "Members: display names or fingerprint prefixes.")
    var peers: [String] = []

    var params: RoomsCreateParams { RoomsCreateParams(name: name, members: peers) }

    func validate() throws { try validateForCommandLine(params) }

    func run() throws {
        try Session.run(options) { client in
            let result = try client.call(params)
            report(result, json: options.json, "Created #\(Terminal.line(result.room.name)) (id \(result.room.id)).")
        }
    }
}

struct RoomAddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a peer to a room.")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The room: #NAME, NAME or id prefix.")
    var room: String

    @Argument(help: "The peer to add (display name or fingerprint prefix).")
    var peer: String

    func validate() throws { try validateForCommandLine(RoomsAddParams(room: room, peer: peer)) }

    func run() throws {
        try Session.run(options, peer: peer) { client in
            let result = try client.call(RoomsAddParams(room: room, peer: peer))
            report(result, json: options.json, "Added \(Terminal.line(peer)) to #\(Terminal.line(result.room.name)).")
        }
    }
}

struct RoomRemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove a member from a room (it receives nothing sent afterwards).")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The room: #NAME, NAME or id prefix.")
    var room: String

    @Argument(help: "The member to remove (display name or fingerprint prefix; your own name leaves the room).")
    var peer: String

    func validate() throws { try validateForCommandLine(RoomsRemoveParams(room: room, peer: peer)) }

    func run() throws {
        try Session.run(options, peer: peer) { client in
            let result = try client.call(RoomsRemoveParams(room: room, peer: peer))
            report(result, json: options.json, "Removed \(Terminal.line(peer)) from #\(Terminal.line(result.room.name)).")
        }
    }
}

struct RoomLeaveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "leave", abstract: "Leave a room.")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The room: #NAME, NAME or id prefix.")
    var room: String

    func validate() throws { try validateForCommandLine(RoomsLeaveParams(room: room)) }

    func run() throws {
        try Session.run(options) { client in
            let result = try client.call(RoomsLeaveParams(room: room))
            if options.json { return Console.json(result) }
            Console.out("You left #\(Terminal.line(result.room.name)).")
        }
    }
}
