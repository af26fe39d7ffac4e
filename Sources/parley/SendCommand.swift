import ArgumentParser
import Foundation
import ParleyControlProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// `parley send PEER TEXT`: queue a message, optionally waiting for delivery.
struct SendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a message. It is stored and delivered when the peer is online.",
        discussion: """
            The text comes from the argument, from standard input when it is `-` or when no text is given \
            and standard input is not a terminal (`echo hi | parley send bob`), or from a file with \
            --file PATH. One final newline of piped or file text is dropped. Says whether the message was \
            delivered, sent (the peer is online; its acknowledgement follows) or queued because the peer is offline.
            """)

    /// Extra time the CLI waits beyond `--timeout` so the daemon's own timeout error (which
    /// carries the message id) arrives before the CLI gives up on the socket.
    static let answerMargin: Duration = .seconds(5)

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "Recipient: display name or fingerprint prefix (at least 4 characters), or #ROOM.")
    var peer: String

    @Argument(help: "The message text (quote it); `-` reads it from standard input.")
    var text: String?

    @Option(name: .long, help: ArgumentHelp("Send the contents of this file (UTF-8 text).", valueName: "path"))
    var file: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Send this file too (repeatable). Opened by this command with your rights; parleyd keeps its own copy until it is sent.",
            valueName: "path"))
    var attach: [String] = []

    @Flag(name: .long, help: "Wait until the peer acknowledges delivery (with --attach: until every file arrived).")
    var wait = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --wait: give up after this many seconds (the message stays queued). Default 30, at most 300.",
            valueName: "seconds"))
    var timeout: Int?

    func params(body: String) -> MessagesSendParams {
        MessagesSendParams(
            to: peer, body: body, wait: wait ? true : nil, timeoutMs: timeout.map { $0 * 1000 })
    }

    func validate() throws {
        if timeout != nil && !wait { throw ValidationError("--timeout only applies together with --wait") }
        if let timeout, !(1...(ControlLimits.maxSendWaitMilliseconds / 1000)).contains(timeout) {
            throw ValidationError(
                "--timeout must be between 1 and \(ControlLimits.maxSendWaitMilliseconds / 1000) seconds")
        }
        if file != nil && text != nil { throw ValidationError("give the text or --file, not both") }
        if text == nil && file == nil && isatty(0) == 1 && attach.isEmpty {
            throw ValidationError("no message text: give it as an argument, `-` to read standard input, or --file PATH")
        }
        if let text, text != MessageText.standardInputMarker { try validateForCommandLine(params(body: text)) }
        if !attach.isEmpty && (timeout != nil) { throw ValidationError("--timeout does not apply to --attach") }
    }

    func run() throws {
        if !attach.isEmpty {
            // Every file is opened (as you) before anything is sent, the text included:
            // one file that cannot be sent and nothing goes.
            let opened: OpenedFiles
            do { opened = try OpenedFiles.open(attach) } catch {
                Console.err("parley: \(error)")
                throw ExitCode(CLIExitCode.usage)
            }
            if text != nil || file != nil {
                do { try sendText() } catch {
                    opened.close()
                    throw error
                }
            }
            return try sendFiles(opened)
        }
        try sendText()
    }

    /// `--attach`: one `files.send` with every file's descriptor (one transfer per file and
    /// recipient, all or none), then with `--wait` the progress until every transfer ended.
    func sendFiles(_ opened: OpenedFiles) throws {
        var transfers: [FileTransferInfo] = []
        try Session.run(options, peer: peer, callTimeout: .seconds(600)) { client in
            let r = try opened.send(client, to: peer)
            transfers = r.transfers
            if !options.json && !wait {
                for t in r.transfers { Console.out("→ offered " + FileLines.summary(t)) }
            }
            if wait {
                transfers = try FileWait.untilFinal(client, transfers, progress: !options.json && isatty(1) == 1)
            }
        }
        if options.json { return Console.json(FilesSendResult(transfers: transfers)) }
        if wait { for t in transfers { Console.out(FileLines.summary(t)) } }
        if wait && transfers.contains(where: { $0.state != "completed" }) { throw ExitCode(CLIExitCode.daemonError) }
    }

    func sendText() throws {
        let body: String
        do {
            body = try MessageText.resolve(argument: text, file: file)
        } catch let error as MessageText.Failure {
            Console.err("parley: \(error)")
            throw ExitCode(CLIExitCode.usage)
        }
        let params = params(body: body)
        do { try params.validate() } catch {
            Console.err("parley: \(error.message)")
            throw ExitCode(CLIExitCode.usage)
        }
        let callTimeout =
            params.effectiveWait
            ? .milliseconds(params.effectiveTimeoutMs) + Self.answerMargin
            : ControlClient.defaultCallTimeout
        try Session.run(options, peer: peer, callTimeout: callTimeout) { client in
            let result = try client.call(params)
            let message = result.message
            if options.json { return Console.json(result) }
            let who = Terminal.line(message.toName)
            if let room = message.room {
                let name = "#" + Terminal.line(room.name)
                Console.out(
                    message.state == .delivered
                        ? "✓ delivered to every member of \(name)"
                        : "… queued for \(name); each member gets it when it is online (id \(Terminal.line(message.id)))"
                )
            } else if message.state == .delivered {
                Console.out("✓ delivered to \(who)")
            } else if result.peerOnline == true {
                Console.out(
                    "→ sent to \(who) (id \(Terminal.line(message.id))); ✓ follows when \(who) acknowledges it "
                        + "(--wait waits for that)")
            } else if result.peerOnline == false {
                Console.out(
                    "… queued because \(who) is offline; it is delivered when \(who) comes online "
                        + "(id \(Terminal.line(message.id)))")
            } else {
                Console.out("… queued for \(who) (id \(Terminal.line(message.id)))")
            }
        }
    }
}
