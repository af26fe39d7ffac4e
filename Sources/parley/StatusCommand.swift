import ArgumentParser
import ParleyControlProtocol

/// `parley status`: is the daemon up, and what is it doing.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show the daemon's state: name, listeners, peers, queue.")

    @OptionGroup var options: ConnectionOptions

    func run() throws {
        try Session.run(options) { client in
            let status = try client.call(NodeStatusParams())
            if options.json { return Console.json(status) }
            Console.out("\(Terminal.line(status.name))  \(Terminal.line(status.fingerprint))")
            Console.out(
                "parleyd \(Terminal.line(status.version)), up \(HumanFormat.duration(seconds: status.uptimeSeconds))")
            let listen =
                status.listen.isEmpty ? "not listening" : status.listen.map(Terminal.line).joined(separator: ", ")
            Console.out("listening: \(listen)")
            // What a colleague types to add this node by address (`parley connect`, or the
            // page's Add by address).
            if let reachable = status.reachableAt, !reachable.isEmpty {
                Console.out("address:   \(reachable.map(Terminal.line).joined(separator: ", "))")
            }
            Console.out("peers:     \(status.peersOnline) online, \(status.peersKnown) known")
            Console.out("queued:    \(HumanFormat.count(status.queued, "message"))")
            Console.out("mDNS:      \(status.mdns.rawValue)")
        }
    }
}
