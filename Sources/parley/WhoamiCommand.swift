import ArgumentParser
import ParleyControlProtocol

/// `parley whoami`: this node's identity, to read out to others for verification.
struct WhoamiCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "whoami",
        abstract: "Show this node's name, fingerprint and keys (share the fingerprint to be verified).")

    @OptionGroup var options: ConnectionOptions

    func run() throws {
        try Session.run(options) { client in
            let me = try client.call(NodeWhoamiParams())
            if options.json { return Console.json(me) }
            for line in HumanFormat.table([
                ["name:", Terminal.line(me.name)],
                ["host:", Terminal.line(me.host)],
                ["fingerprint:", Terminal.line(me.fingerprint)],
                ["identity key:", Terminal.line(me.identityKey)],
                ["noise key:", Terminal.line(me.noiseKey)],
                ["card:", "#\(me.cardSequence) \(Terminal.line(me.card))"]
            ]) { Console.out(line) }
        }
    }
}
