import ArgumentParser
import ParleyControlProtocol

/// `parley connect HOST:PORT`: dial a peer by address (when mDNS cannot find it).
struct ConnectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connect", abstract: "Ask the daemon to connect to a peer at an address.")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: ArgumentHelp("host:port of the peer; IPv6 in brackets: [fe80::1%eth0]:7777.", valueName: "host:port"))
    var address: String

    func validate() throws { try validateForCommandLine(PeersConnectParams(address: address)) }

    func run() throws {
        try Session.run(options) { client in
            let result = try client.call(PeersConnectParams(address: address))
            if options.json { return Console.json(result) }
            Console.out("Dialing \(Terminal.line(result.address)); `parley peers` shows it once it is online.")
        }
    }
}
