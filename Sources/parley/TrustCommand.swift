import ArgumentParser
import ParleyControlProtocol

/// `parley trust`: mark peers verified, accept changed keys.
struct TrustCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Verify a peer's fingerprint, or accept a peer's changed key.",
        discussion: "`parley trust PEER --fingerprint FP` is `parley trust verify PEER --fingerprint FP`.",
        subcommands: [TrustVerifyCommand.self, TrustAcceptChangeCommand.self],
        defaultSubcommand: TrustVerifyCommand.self)
}

/// `parley trust [verify] PEER --fingerprint FP`.
struct TrustVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Mark a peer verified after comparing its full fingerprint out of band.")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The peer (display name or fingerprint prefix).")
    var peer: String

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The peer's full fingerprint as read from its own device (`parley whoami` there); dashes and case ignored.",
            valueName: "fp"))
    var fingerprint: String

    func validate() throws { try validateForCommandLine(TrustVerifyParams(peer: peer, fingerprint: fingerprint)) }

    func run() throws {
        try Session.run(options, peer: peer) { client in
            let result = try client.call(TrustVerifyParams(peer: peer, fingerprint: fingerprint))
            if options.json { return Console.json(result) }
            Console.out("✓ \(Terminal.line(result.peer.name)) is verified (\(Terminal.line(result.peer.fingerprint)))")
        }
    }
}

/// `parley trust accept-change PEER`.
struct TrustAcceptChangeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accept-change",
        abstract: "Accept a peer's new identity key, after checking the new safety number with the peer.")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The peer whose key changed (display name or fingerprint prefix).")
    var peer: String

    func validate() throws { try validateForCommandLine(TrustAcceptChangeParams(peer: peer)) }

    func run() throws {
        try Session.run(options, peer: peer) { client in
            let result = try client.call(TrustAcceptChangeParams(peer: peer))
            if options.json { return Console.json(result) }
            Console.out("Accepted the new key of \(Terminal.line(result.peer.name)) (\(Terminal.line(result.peer.fingerprint))).")
            if result.retargeted > 0 {
                Console.out("\(HumanFormat.count(result.retargeted, "queued message")) will go to the new key.")
            }
        }
    }
}
