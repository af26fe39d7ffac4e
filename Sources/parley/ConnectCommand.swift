import ArgumentParser
import ParleyControlProtocol

/// `parley connect HOST:PORT`: dial a peer by address (when mDNS cannot find it) and say
/// whether it worked.
struct ConnectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connect",
        abstract: "Connect to a peer at an address and report whether a session came up.",
        discussion: """
            Waits for the outcome: success names the peer; a failure (refused, unreachable, handshake or \
            trust refused) is reported with its reason, exit status 1, and the address is not dialled again. \
            With --no-wait the daemon keeps dialling the address with backoff and the command returns at once.
            """)

    /// Extra time beyond `--timeout` so the daemon's own timeout answer arrives first.
    static let answerMargin: Duration = .seconds(5)

    @OptionGroup var options: ConnectionOptions

    @Argument(
        help: ArgumentHelp("host:port of the peer; IPv6 in brackets: [fe80::1%eth0]:7777.", valueName: "host:port"))
    var address: String

    @Flag(name: .customLong("no-wait"), help: "Return at once; parleyd keeps dialling the address with backoff.")
    var noWait = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Give up waiting after this many seconds. Default 10, at most 300.",
            valueName: "seconds"))
    var timeout: Int?

    var params: PeersConnectParams {
        PeersConnectParams(address: address, wait: noWait ? nil : true, timeoutMs: timeout.map { $0 * 1000 })
    }

    func validate() throws {
        if timeout != nil && noWait { throw ValidationError("--timeout does not apply with --no-wait") }
        if let timeout, !(1...(ControlLimits.maxSendWaitMilliseconds / 1000)).contains(timeout) {
            throw ValidationError(
                "--timeout must be between 1 and \(ControlLimits.maxSendWaitMilliseconds / 1000) seconds")
        }
        try validateForCommandLine(params)
    }

    func run() throws {
        let params = self.params
        let callTimeout =
            params.effectiveWait
            ? .milliseconds(params.effectiveTimeoutMs) + Self.answerMargin : ControlClient.defaultCallTimeout
        try Session.run(options, callTimeout: callTimeout) { client in
            let result = try client.call(params)
            if options.json { return Console.json(result) }
            switch result.status {
            case .connected:
                let who =
                    result.peer.map { "\(Terminal.line($0.name)) (\(Terminal.line($0.fingerprint)))" } ?? "the peer"
                Console.out("✓ connected to \(who) at \(Terminal.line(result.address))")
            case .dialing:
                Console.out(
                    "Dialing \(Terminal.line(result.address)) (retried with backoff); `parley peers` shows it once it is online."
                )
            }
        }
    }
}
