import ArgumentParser
import ParleyControlProtocol

/// `parley send PEER TEXT`: queue a message, optionally waiting for delivery.
struct SendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a message. It is stored and delivered when the peer is online.")

    /// Extra time the CLI waits beyond `--timeout` so the daemon's own timeout error (which
    /// carries the message id) arrives before the CLI gives up on the socket.
    static let answerMargin: Duration = .seconds(5)

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "Recipient: display name or fingerprint prefix (at least 4 characters), or #ROOM.")
    var peer: String

    @Argument(help: "The message text (quote it).")
    var text: String

    @Flag(name: .long, help: "Wait until the peer acknowledges delivery.")
    var wait = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --wait: give up after this many seconds (the message stays queued). Default 30, at most 300.",
            valueName: "seconds"))
    var timeout: Int?

    var params: MessagesSendParams {
        MessagesSendParams(
            to: peer, body: text, wait: wait ? true : nil, timeoutMs: timeout.map { $0 * 1000 })
    }

    func validate() throws {
        if timeout != nil && !wait { throw ValidationError("--timeout only applies together with --wait") }
        if let timeout, !(1...(ControlLimits.maxSendWaitMilliseconds / 1000)).contains(timeout) {
            throw ValidationError("--timeout must be between 1 and \(ControlLimits.maxSendWaitMilliseconds / 1000) seconds")
        }
        try validateForCommandLine(params)
    }

    func run() throws {
        let params = self.params
        let callTimeout = params.effectiveWait
            ? .milliseconds(params.effectiveTimeoutMs) + Self.answerMargin
            : ControlClient.defaultCallTimeout
        try Session.run(options, peer: peer, callTimeout: callTimeout) { client in
            let message = try client.call(params).message
            if options.json { return Console.json(MessagesSendResult(message: message)) }
            let who = Terminal.line(message.toName)
            if let room = message.room {
                let name = "#" + Terminal.line(room.name)
                Console.out(message.state == .delivered
                    ? "✓ delivered to every member of \(name)"
                    : "… queued for \(name); each member gets it when it is online (id \(Terminal.line(message.id)))")
            } else if message.state == .delivered {
                Console.out("✓ delivered to \(who)")
            } else {
                Console.out("… queued for \(who); it is delivered when \(who) is online (id \(Terminal.line(message.id)))")
            }
        }
    }
}
