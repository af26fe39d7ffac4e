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

    @Argument(
        help: "Recipient: display name or fingerprint prefix (at least 4 characters), or #ROOM.",
        completion: PeerCompletion.peersAndRooms)
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
        if !attach.isEmpty { return try sendWithAttachments() }
        try sendText(resolveBody())
    }

    /// The message text from the argument, standard input or `--file`; a usage error
    /// (nothing sent) when it cannot be read or is not a valid message.
    func resolveBody() throws -> MessagesSendParams {
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
        return params
    }

    /// `--attach`: all of it goes or none of it does. Every file is checked (exists, a
    /// regular file; a typo gets a suggestion) and opened here, with your rights, and the
    /// text read, before anything is sent; then one `files.send` passes every file's
    /// descriptor (issue 28: the daemon never opens a path) and the daemon offers all of them
    /// or none; the text goes last, so if it is refused the offers are cancelled. With
    /// `--wait`, the progress until every transfer ended.
    func sendWithAttachments() throws {
        let cwd = FileManager.default.currentDirectoryPath
        let paths = attach.map { $0.hasPrefix("/") ? $0 : (cwd as NSString).appendingPathComponent($0) }
        let problems = AttachmentCheck.problems(paths)
        guard problems.isEmpty else {
            for problem in problems { Console.err("parley: cannot attach \(problem)") }
            Console.err("Nothing was sent (neither the text nor any file). Fix the path and send again.")
            throw ExitCode(CLIExitCode.usage)
        }
        let opened: OpenedFiles
        do { opened = try OpenedFiles.open(paths) } catch {
            Console.err("parley: \(error)")
            Console.err("Nothing was sent (neither the text nor any file). Fix the path and send again.")
            throw ExitCode(CLIExitCode.usage)
        }
        let textParams: MessagesSendParams?
        do { textParams = (text != nil || file != nil) ? try resolveBody() : nil } catch {
            opened.close()
            throw error
        }
        var transfers: [FileTransferInfo] = []
        try Session.run(options, peer: peer, callTimeout: .seconds(600)) { client in
            do {
                transfers = try opened.send(client, to: peer).transfers
            } catch let error as ControlClientError {
                Console.err("parley: nothing was sent: " + withdrawnNote(0))
                throw error
            }
            let offered = transfers.map(\.id)
            if let textParams {
                do {
                    try sendText(textParams, client: client)
                } catch let error as ControlClientError {
                    withdraw(offered, client)
                    Console.err("parley: nothing was sent: " + withdrawnNote(offered.count))
                    throw error
                }
            }
            if !options.json && !wait {
                for t in transfers { Console.out("→ offered " + FileLines.summary(t)) }
            }
            if wait {
                transfers = try FileWait.untilFinal(client, transfers, progress: !options.json && isatty(1) == 1)
            }
        }
        if options.json { return Console.json(FilesSendResult(transfers: transfers)) }
        if wait { for t in transfers { Console.out(FileLines.summary(t)) } }
        if wait && transfers.contains(where: { $0.state != "completed" }) { throw ExitCode(CLIExitCode.daemonError) }
    }

    /// Cancels the offers made so far, best effort (the connection may be the problem).
    private func withdraw(_ ids: [String], _ client: ControlClient) {
        for id in ids { _ = try? client.call(FilesCancelParams(id: id)) }
    }

    private func withdrawnNote(_ count: Int) -> String {
        count == 0
            ? "the text and files stay unsent"
            : "the \(HumanFormat.count(count, "file offer")) already made were cancelled and the text stays unsent"
    }

    func sendText(_ params: MessagesSendParams) throws {
        let callTimeout =
            params.effectiveWait
            ? .milliseconds(params.effectiveTimeoutMs) + Self.answerMargin
            : ControlClient.defaultCallTimeout
        try Session.run(options, peer: peer, callTimeout: callTimeout) { client in
            try sendText(params, client: client)
        }
    }

    /// One `messages.send` on an open connection, and what became of it.
    func sendText(_ params: MessagesSendParams, client: ControlClient) throws {
        let result = try client.call(params)
        if options.json { return Console.json(result) }
        Console.out(Self.outcome(result))
    }

    /// `→ sent to bob …`, `… queued because bob is offline …`, `→ sent to 2 of 3 members
    /// of #lab …`: what the daemon reported about a stored message.
    static func outcome(_ result: MessagesSendResult) -> String {
        let message = result.message
        let who = Terminal.line(message.toName)
        let id = Terminal.line(message.id)
        if let room = message.room {
            let name = "#" + Terminal.line(room.name)
            if result.roomRecipients == 0 {
                // Written for the invited (docs/PROTOCOL.md "Who gets which message").
                return "… kept in \(name): nobody else has joined yet; those invited get it when they join (id \(id))"
            }
            if message.state == .delivered { return "✓ delivered to every member of \(name)" }
            guard let all = result.roomRecipients, let online = result.roomRecipientsOnline else {
                return "… queued for \(name); each member gets it when it is online (id \(id))"
            }
            if online == all {
                return "→ sent to every member of \(name) (\(HumanFormat.count(all, "member")), all online); "
                    + "✓ follows when they acknowledge it (id \(id))"
            }
            if online == 0 {
                return "… queued for \(name): no member is online; each gets it when it comes online (id \(id))"
            }
            return "→ sent to the \(online) of \(all) members of \(name) online now; the others get it when "
                + "they come online (id \(id))"
        }
        if message.state == .delivered { return "✓ delivered to \(who)" }
        if result.peerOnline == true {
            return "→ sent to \(who) (id \(id)); ✓ follows when \(who) acknowledges it (--wait waits for that)"
        }
        if result.peerOnline == false {
            return "… queued because \(who) is offline; it is delivered when \(who) comes online (id \(id))"
        }
        return "… queued for \(who) (id \(id))"
    }
}
