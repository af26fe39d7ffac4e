import ArgumentParser
import ParleyControlProtocol

/// `parley rotate-key`: a new Noise static key, vouched for by a re-issued card.
struct RotateKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate-key",
        abstract: "Replace this node's Noise key and re-issue its card (the identity and fingerprint stay).")

    @OptionGroup var options: ConnectionOptions

    func run() throws {
        try Session.run(options) { client in
            let r = try client.call(NodeRotateKeyParams())
            if options.json { return Console.json(r) }
            Console.out(
                "new Noise key \(r.noiseKey), card #\(r.cardSequence); \(r.peersNotified) online peer(s) notified, others at next contact"
            )
        }
    }
}
