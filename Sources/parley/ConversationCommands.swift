import ArgumentParser
import ParleyControlProtocol

/// The help text of a MESSAGE argument.
private let messageHelp = ArgumentHelp(
    "The message: its id or its first 8+ digits (`parley read --ids PEER` shows them).", valueName: "message")

/// `parley reply MESSAGE TEXT`: answer a message, quoting it.
struct ReplyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reply",
        abstract: "Reply to a message: your text goes to its conversation, quoting it.")

    @OptionGroup var options: ConnectionOptions
    @Argument(help: messageHelp) var message: String
    @Argument(help: "The reply (quote it).") var text: String

    var params: MessagesReplyParams { MessagesReplyParams(message: message, body: text) }
    func validate() throws { try validateForCommandLine(params) }

    func run() throws {
        try Session.run(options) { client in
            let result = try client.call(params)
            if options.json { return Console.json(result) }
            let who = Terminal.line(result.message.toName)
            Console.out(
                result.message.state == .delivered
                    ? "✓ reply delivered to \(who)"
                    : "… reply queued for \(who) (id \(Terminal.line(String(result.message.id.prefix(8)))))")
        }
    }
}

/// `parley edit MESSAGE TEXT`: replace the text of one of your own messages.
struct EditCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Change the text of a message you sent, here and at the recipient (shown as edited).")

    @OptionGroup var options: ConnectionOptions
    @Argument(help: messageHelp) var message: String
    @Argument(help: "The new text (quote it).") var text: String

    var params: MessagesEditParams { MessagesEditParams(message: message, body: text) }
    func validate() throws { try validateForCommandLine(params) }

    func run() throws {
        try Session.run(options) { client in
            let result = try client.call(params)
            if options.json { return Console.json(result) }
            Console.out("✎ edited: " + HumanFormat.message(result.message))
        }
    }
}

/// `parley delete MESSAGE`: delete one of your own messages for everyone.
struct DeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a message you sent for everyone: its text is erased here and at the recipient.")

    @OptionGroup var options: ConnectionOptions
    @Argument(help: messageHelp) var message: String

    var params: MessagesDeleteParams { MessagesDeleteParams(message: message) }
    func validate() throws { try validateForCommandLine(params) }

    func run() throws {
        try Session.run(options) { client in
            let result = try client.call(params)
            if options.json { return Console.json(result) }
            Console.out(
                "🗑 deleted for everyone: \(Terminal.line(String(result.message.id.prefix(8)))) "
                    + "(the recipient's copy is erased when the deletion reaches it)")
        }
    }
}

/// `parley react MESSAGE EMOJI [--remove]`.
struct ReactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "react",
        abstract: "React to a message with an emoji or a short word (--remove takes it back).")

    @OptionGroup var options: ConnectionOptions
    @Argument(help: messageHelp) var message: String
    @Argument(help: "One emoji or a short word, e.g. 👍 or +1.") var reaction: String
    @Flag(name: .long, help: "Take this reaction back.") var remove = false

    var params: MessagesReactParams {
        MessagesReactParams(message: message, reaction: reaction, remove: remove ? true : nil)
    }
    func validate() throws { try validateForCommandLine(params) }

    func run() throws {
        try Session.run(options) { client in
            let result = try client.call(params)
            if options.json { return Console.json(result) }
            Console.out(HumanFormat.message(result.message))
        }
    }
}

/// `parley presence [TEXT] [--clear]`: the status line peers see next to your name.
struct PresenceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "presence",
        abstract: "Set the status line your peers see (\"in a meeting until 3\"); --clear removes it.")

    @OptionGroup var options: ConnectionOptions
    @Argument(help: "One short line, at most 140 bytes.") var text: String?
    @Flag(name: .long, help: "Remove the status line.") var clear = false

    var params: NodeSetStatusParams { NodeSetStatusParams(status: clear ? "" : (text ?? "")) }

    func validate() throws {
        if clear == (text != nil) { throw ValidationError("give a status line, or --clear") }
        try validateForCommandLine(params)
    }

    func run() throws {
        try Session.run(options) { client in
            let result = try client.call(params)
            if options.json { return Console.json(result) }
            Console.out(
                result.status.isEmpty
                    ? "status cleared (\(HumanFormat.count(result.peersNotified, "peer")) told now)"
                    : "status: \(Terminal.line(result.status)) (\(HumanFormat.count(result.peersNotified, "peer")) told now, the others when they connect)"
            )
        }
    }
}
