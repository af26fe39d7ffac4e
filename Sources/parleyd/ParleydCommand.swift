import ArgumentParser
import Foundation
import Logging
import ParleyConfiguration
import ParleyControlProtocol
import ParleyCore
import ParleyDaemon
import ParleyNodeCore
import ParleyStore
import ServiceLifecycle

/// `parleyd`: the Parley daemon. Every option has the same meaning as the key of
/// the same name in parleyd.toml; flags win over the file.
@main
struct ParleydCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parleyd",
        abstract: "Parley daemon: end-to-end encrypted chat on the local network, no server.",
        discussion: """
            Runs in the foreground. State (keys, messages) lives in --state-dir; local
            clients such as `parley` talk to it over the control socket.
            Signals: SIGTERM/SIGINT stop it gracefully, SIGHUP re-reads the config file.
            """,
        version: ProtocolVersion.versionText(package: ParleyVersion.string))

    @Option(name: .long, help: ArgumentHelp("Configuration file (TOML).", valueName: "path"))
    var config: String?

    @Option(
        name: .customLong("state-dir"),
        help: ArgumentHelp("Directory for keys and the message store (created 0700).", valueName: "dir"))
    var stateDir: String?

    @Option(
        name: .long, help: ArgumentHelp("Display name other people see (default: the host name).", valueName: "name"))
    var name: String?

    @Option(
        name: .customLong("host-name"),
        help: ArgumentHelp("Host name written into this node's card.", valueName: "host"))
    var hostName: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "TCP address to listen on, HOST:PORT (repeatable; port 0 = any; default [::]:7744).", valueName: "host:port"
        ))
    var listen: [String] = []

    @Option(name: .long, help: ArgumentHelp("Static peer to dial, HOST:PORT (repeatable).", valueName: "host:port"))
    var peer: [String] = []

    @Option(name: .long, help: ArgumentHelp("Control socket path.", valueName: "path"))
    var socket: String?

    @Flag(name: .customLong("no-mdns"), help: "Do not advertise or browse with mDNS/DNS-SD.")
    var noMDNS = false

    @Option(name: .customLong("log-level"), help: ArgumentHelp("error, warning, info or debug.", valueName: "level"))
    var logLevel: String?

    @Option(
        name: .customLong("network-key"),
        help: ArgumentHelp(
            "File with a shared 32-byte network key (64 hex digits): only nodes with it can connect.", valueName: "path"
        ))
    var networkKey: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "full (fsync every commit) or normal (survives a crash of parleyd, not of the machine).", valueName: "mode")
    )
    var durability: String?

    @Option(
        name: .customLong("new-identities"),
        help: ArgumentHelp(
            "accept (pin a key never seen on first use) or hold (no session until you run `parley trust accept`).",
            valueName: "policy"))
    var newIdentities: String?

    @Option(
        name: .customLong("handshake-timeout-ms"),
        help: ArgumentHelp(
            "Drop a connection whose handshake takes longer (10...3600000, default 5000).", valueName: "ms"))
    var handshakeTimeoutMs: Int?

    @Option(
        name: .customLong("ping-interval-ms"),
        help: ArgumentHelp("Ping a peer after this much silence (10...3600000, default 600000).", valueName: "ms"))
    var pingIntervalMs: Int?

    @Option(
        name: .customLong("dead-after-ms"),
        help: ArgumentHelp(
            "Consider a peer gone when a ping, or the kernel's keepalive probes, go unanswered this long (10...3600000, default 15000).",
            valueName: "ms"))
    var deadAfterMs: Int?

    @Flag(
        name: .customLong("print-card"),
        help: "Create the identity if needed, print the fingerprint and signed card, and exit.")
    var printCard = false

    func run() async throws {
        let env = ProcessInfo.processInfo.environment
        var flags = ConfigOverrides()
        flags.stateDirectory = stateDir
        flags.name = name
        flags.hostName = hostName
        if !listen.isEmpty { flags.listen = try listen.map(parseAddress) }
        if !peer.isEmpty { flags.peers = try peer.map(parseAddress) }
        flags.socketPath = socket
        if noMDNS { flags.mdnsEnabled = false }
        if let logLevel {
            guard let l = LogLevel(logLevel) else {
                throw ValidationError("--log-level must be error, warning, info or debug")
            }
            flags.logLevel = l
        }
        flags.networkKeyPath = networkKey
        if let durability {
            guard let d = Durability(durability) else { throw ValidationError("--durability must be full or normal") }
            flags.durability = d
        }
        if let newIdentities {
            guard let policy = TrustDecision.NewIdentityPolicy(rawValue: newIdentities) else {
                throw ValidationError("--new-identities must be accept or hold")
            }
            flags.newIdentities = policy
        }
        flags.handshakeTimeoutMilliseconds = handshakeTimeoutMs
        flags.pingIntervalMilliseconds = pingIntervalMs
        flags.deadAfterMilliseconds = deadAfterMs

        let home = env["HOME"]
        let configPath = config ?? ConfigFile.defaultPath(environment: env, homeDirectory: home)
        let explicitConfig = config
        let load: @Sendable () throws -> DaemonConfiguration = { [flags] in
            let file: ConfigFile?
            if let explicitConfig {
                file = try ConfigFile.load(path: explicitConfig)
            } else if let configPath {
                file = try ConfigFile.loadIfPresent(path: configPath)
            } else {
                file = nil
            }
            let defaults = DaemonConfiguration.defaults(
                environment: env, hostName: DaemonConfiguration.currentHostName(),
                homeDirectory: home)
            return try DaemonConfiguration.merged(defaults: defaults, file: file, flags: flags)
        }
        let configuration: DaemonConfiguration
        do {
            configuration = try load()
        } catch {
            FileHandle.standardError.write(Data("parleyd: \(error)\n".utf8))
            throw ExitCode(78)  // EX_CONFIG
        }

        if printCard {
            do {
                let (_, store, card, created) = try Daemon.loadIdentity(config: configuration)
                try? store.close()
                if created { print("created a new identity in \(configuration.stateDirectory)") }
                print("name:        \(card.displayName)")
                print("host:        \(card.hostName)")
                print("fingerprint: \(card.fingerprint)")
                print("identity:    \(card.identityKey.hex)")
                print("noise key:   \(card.noiseKey.hex)")
                print("sequence:    \(card.sequence)")
                print("card:        \(Sodium.hex(card.encoded()))")
            } catch {
                FileHandle.standardError.write(Data("parleyd: \(error)\n".utf8))
                throw ExitCode(1)
            }
            return
        }

        // Every swift-log logger in the process (ours, the service group's) writes through
        // one handler to stderr, at one level that a reload changes.
        let level = SharedLogLevel(configuration.logLevel.loggerLevel)
        let format = LogFormat.forStandardError(environment: env)
        LoggingSystem.bootstrap { _ in ParleyLogHandler(format: format, level: level) }
        let log = Logger(label: "parleyd")

        let daemon = Daemon(
            configuration: configuration, reloader: configPath == nil ? nil : load,
            environment: env, log: log, logLevel: level)
        let services = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [daemon], gracefulShutdownSignals: [.sigterm, .sigint], logger: log))
        do {
            try await services.run()
        } catch let error as ServiceGroupError {
            log.error("parleyd stopped: \(error)")
            throw ExitCode(1)
        } catch {
            // The daemon's own error: it has logged why it could not start.
            throw ExitCode(1)
        }
    }

    private func parseAddress(_ text: String) throws -> HostPort {
        do { return try HostPort(parsing: text) } catch {
            throw ValidationError("invalid address '\(text)': \(error)")
        }
    }
}
