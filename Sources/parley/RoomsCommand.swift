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
            var rows = [["ROOM", "ID", "STATUS", "UNREAD", "QUEUED", "MEMBERS"]]
            for room in list.rooms {
                rows.append([
                    "#" + HumanFormat.truncated(Terminal.line(room.name), to: Self.maxNameColumn),
                    String(room.id.prefix(8)),
                    HumanFormat.roomStatus(room),
                    String(room.unread),
                    String(room.queued),
                    HumanFormat.roomMembersColumn(room)
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
        abstract: "Create a room, invite and remove members, answer invitations, give roles, leave.",
        discussion: """
            ROOM is #NAME, NAME, or an id prefix of at least 4 hex digits (quote #NAME in a \
            shell). The creator is the room's owner. Owners and admins remove members ranked \
            below them, give roles, rename; any joined member adds (invites) peers unless the \
            room was created with --only-admins-add. An invited peer is in the room only once \
            it accepts (`parley room accept ROOM`). Every member's daemon checks each signed \
            change. Send with `parley send '#NAME' TEXT`, read with `parley read '#NAME'`.
            """,
        subcommands: [
            RoomCreateCommand.self, RoomAddCommand.self, RoomRemoveCommand.self, RoomLeaveCommand.self,
            RoomAcceptCommand.self, RoomDeclineCommand.self, RoomPromoteCommand.self,
            RoomDemoteCommand.self, RoomRenameCommand.self, RoomPolicyCommand.self,
            RoomHistoryCommand.self
        ])
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

    @Argument(help: "Peers to invite: display names or fingerprint prefixes.")
    var peers: [String] = []

    @Flag(help: "Only admins and owners may add members.")
    var onlyAdminsAdd = false

    @Flag(help: "Members who join later get the messages written before (default: only what follows their join).")
    var sharedHistory = false

    var params: RoomsCreateParams {
        RoomsCreateParams(
            name: name, members: peers, onlyAdminsAdd: onlyAdminsAdd ? true : nil,
            sharedHistory: sharedHistory ? true : nil)
    }

    func validate() throws { try validateForCommandLine(params) }

    func run() throws {
        try Session.run(options) { client in
            let result = try client.call(params)
            report(result, json: options.json, "Created #\(Terminal.line(result.room.name)) (id \(result.room.id)).")
        }
    }
}

struct RoomAddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Invite a peer to a room (it joins when it accepts).")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The room: #NAME, NAME or id prefix.")
    var room: String

    @Argument(help: "The peer to add (display name or fingerprint prefix).")
    var peer: String

    func validate() throws { try validateForCommandLine(RoomsAddParams(room: room, peer: peer)) }

    func run() throws {
        try Session.run(options, peer: peer) { client in
            let result = try client.call(RoomsAddParams(room: room, peer: peer))
            report(result, json: options.json, "Invited \(Terminal.line(peer)) to #\(Terminal.line(result.room.name)).")
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
            report(
                result, json: options.json, "Removed \(Terminal.line(peer)) from #\(Terminal.line(result.room.name)).")
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

/// A command that names only a room and calls one method on it.
private func roomOnly<P: RoomSelectorParams>(
    _ params: P, _ options: ConnectionOptions, _ headline: (RoomInfo) -> String
) throws {
    try Session.run(options) { client in
        let result = try client.call(params)
        report(result, json: options.json, headline(result.room))
    }
}

struct RoomAcceptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accept", abstract: "Accept an invitation: join the room and start receiving its messages.")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The room: #NAME, NAME or id prefix (see `parley rooms`).")
    var room: String

    func validate() throws { try validateForCommandLine(RoomsAcceptParams(room: room)) }

    func run() throws {
        try roomOnly(RoomsAcceptParams(room: room), options) { "You joined #\(Terminal.line($0.name))." }
    }
}

struct RoomDeclineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decline", abstract: "Decline an invitation (the members see it).")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The room: #NAME, NAME or id prefix (see `parley rooms`).")
    var room: String

    func validate() throws { try validateForCommandLine(RoomsDeclineParams(room: room)) }

    func run() throws {
        try roomOnly(RoomsDeclineParams(room: room), options) { "You declined #\(Terminal.line($0.name))." }
    }
}

/// `promote` and `demote` are `rooms.set_role` with the role they imply (or `--role`).
private func setRole(room: String, peer: String, role: String, options: ConnectionOptions) throws {
    let params = RoomsSetRoleParams(room: room, peer: peer, role: role)
    try Session.run(options, peer: peer) { client in
        let result = try client.call(params)
        report(
            result, json: options.json, "\(Terminal.line(peer)) is now \(role) of #\(Terminal.line(result.room.name)).")
    }
}

struct RoomPromoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "promote", abstract: "Make a member admin (or owner, with --owner).")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The room: #NAME, NAME or id prefix.")
    var room: String

    @Argument(help: "The member (display name or fingerprint prefix).")
    var peer: String

    @Flag(help: "Make it an owner (only an owner may).")
    var owner = false

    var role: String { owner ? "owner" : "admin" }

    func validate() throws { try validateForCommandLine(RoomsSetRoleParams(room: room, peer: peer, role: role)) }

    func run() throws { try setRole(room: room, peer: peer, role: role, options: options) }
}

struct RoomDemoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demote", abstract: "Make an admin (or owner) a plain member, or step down yourself.")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The room: #NAME, NAME or id prefix.")
    var room: String

    @Argument(help: "The member (display name or fingerprint prefix; your own name steps down).")
    var peer: String

    @Option(help: "The role to give: member (default) or admin.")
    var to = "member"

    func validate() throws { try validateForCommandLine(RoomsSetRoleParams(room: room, peer: peer, role: to)) }

    func run() throws { try setRole(room: room, peer: peer, role: to, options: options) }
}

struct RoomRenameCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rename", abstract: "Rename a room (admins and owners).")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The room: #NAME, NAME or id prefix.")
    var room: String

    @Argument(help: "The new name (1-64 bytes, without '#').")
    var name: String

    func validate() throws { try validateForCommandLine(RoomsRenameParams(room: room, name: name)) }

    func run() throws {
        try Session.run(options) { client in
            let result = try client.call(RoomsRenameParams(room: room, name: name))
            report(result, json: options.json, "Renamed to #\(Terminal.line(result.room.name)).")
        }
    }
}

struct RoomHistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract:
            "Set what members who join later get: `shared` (what is written from now on, also before their join) or `joined` (only what follows their join; the default). Admins and owners only."
    )

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The room: #NAME, NAME or id prefix.")
    var room: String

    @Argument(help: "`shared` or `joined`.")
    var history: String

    func validate() throws {
        guard ["shared", "joined"].contains(history) else { throw ValidationError("say `shared` or `joined`") }
    }

    func run() throws {
        try Session.run(options) { client in
            let result = try client.call(RoomsSetPolicyParams(room: room, sharedHistory: history == "shared"))
            report(
                result, json: options.json,
                history == "shared"
                    ? "In #\(Terminal.line(result.room.name)) members who join later get what is written from now on."
                    : "In #\(Terminal.line(result.room.name)) members get only what is written after they join.")
        }
    }
}

struct RoomPolicyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy", abstract: "Set who may add members: `admins` or `members` (admins and owners only).")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The room: #NAME, NAME or id prefix.")
    var room: String

    @Argument(help: "`admins` (only admins and owners add) or `members` (any joined member adds).")
    var whoAdds: String

    func validate() throws {
        guard ["admins", "members"].contains(whoAdds) else { throw ValidationError("say `admins` or `members`") }
    }

    func run() throws {
        try Session.run(options) { client in
            let result = try client.call(RoomsSetPolicyParams(room: room, onlyAdminsAdd: whoAdds == "admins"))
            report(result, json: options.json, "In #\(Terminal.line(result.room.name)) \(whoAdds) may add members.")
        }
    }
}
