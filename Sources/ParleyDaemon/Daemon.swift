import Foundation
import Logging
import NIOCore
import NIOPosix
import ParleyConfiguration
import ParleyControlProtocol
import ParleyCore
import ParleyStore
import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
    import Glibc
#endif

/// parleyd as a swift-service-lifecycle `Service` with an explicit start and a graceful
/// stop: identity and store, the node (peer sessions and outbox), TCP listeners, the
/// control socket, discovery, and systemd integration. Configuration is a plain value
/// passed in. Run it in a `ServiceGroup` whose graceful-shutdown signals are SIGTERM and
/// SIGINT; SIGHUP (reload) it reads itself, in the same task as the stop, so a reload
/// and a shutdown never run at the same time.
public final class Daemon: Service, @unchecked Sendable {
    // @unchecked Sendable: the mutable fields are set by `start()` and then only touched
    // by the task running `run()` (reload, shutdown) or on the node's event loop.
    public enum StartError: Error, CustomStringConvertible {
        case keys(KeyFileError)
        case store(StoreError)
        case card(String)
        case listen(String, String)
        case control(String)
        case networkKey(String, String)
        case downloadDirectory(String)

        public var description: String {
            switch self {
            case .keys(let e): return "\(e)"
            case .store(let e): return "\(e)"
            case .card(let why): return "cannot issue this node's card: \(why)"
            case let .listen(addr, why): return "cannot listen on \(addr): \(why)"
            case .control(let why): return "cannot open the control socket: \(why)"
            case let .networkKey(path, why): return "network key \(path): \(why)"
            case .downloadDirectory(let why): return why
            }
        }
    }

    private var config: DaemonConfiguration
    /// Re-reads the configuration file and merges it with the defaults and the
    /// command-line flags, exactly as at start (SIGHUP). Nil when there is no file.
    public typealias Reloader = @Sendable () throws -> DaemonConfiguration
    private let reloader: Reloader?
    private let environment: [String: String]
    let log: Logging.Logger
    /// The level every logger copy follows; a reload sets it.
    private let logLevel: SharedLogLevel
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private var loop: EventLoop { group.next() }
    private var node: Node!
    private var store: Store!
    private var listeners: [Channel] = []
    private var control: ControlServer!
    private let info = DaemonRuntimeInfo()
    private let notifier: SystemdNotifier?
    private var discovery: DiscoveryService?
    /// Runs notify_command for incoming messages.
    private var notifyHook: NotifyHook?

    /// `logLevel` is the shared level of the handler behind `log` (see `SharedLogLevel`).
    public init(
        configuration: DaemonConfiguration, reloader: Reloader?, environment: [String: String],
        log: Logging.Logger, logLevel: SharedLogLevel
    ) {
        self.config = configuration
        self.reloader = reloader
        self.environment = environment
        self.log = log
        self.logLevel = logLevel
        self.notifier = SystemdNotifier(environment: environment)
    }

    /// The control socket path for this configuration.
    public static func socketPath(for config: DaemonConfiguration, environment: [String: String]) -> String {
        if let p = config.socketPath { return p }
        if environment["RUNTIME_DIRECTORY"] != nil || environment["XDG_RUNTIME_DIR"] != nil {
            return ControlSocketPath.default(environment: environment)
        }
        return (config.stateDirectory as NSString).appendingPathComponent(ControlSocketPath.socketFileName)
    }

    /// Loads (or creates) the node's keys, opens the store (upgrading it, reported to
    /// `storeUpgrade`) and returns the current card.
    public static func loadIdentity(
        config: DaemonConfiguration, storeUpgrade: StoreUpgradeProgress? = nil
    ) throws(StartError) -> (NodeKeys, Store, Card, Bool) {
        let keys: NodeKeys
        let created: Bool
        do { (keys, created) = try KeyFiles.loadOrCreate(stateDirectory: config.stateDirectory) } catch {
            throw .keys(error)
        }
        let store: Store
        do {
            store = try Store(
                directory: config.stateDirectory,
                durability: config.durability, upgradeProgress: storeUpgrade)
        } catch { throw .store(error) }
        do {
            let card = try OwnCard.current(
                keys: keys, displayName: config.name, hostName: config.hostName,
                store: store, now: UInt64(max(0, Node.nowMs() / 1000)))
            return (keys, store, card, created)
        } catch {
            throw .card("\(error)")
        }
    }

    /// Every damaged row the store's reads leave out (`UnreadableRow`) is logged once, by
    /// table and row id with what is wrong, never its content: the rest is shown, sent and
    /// synced without it, and the operator learns which row to look at.
    static func logUnreadableRows(of store: Store, to log: Logger) {
        store.unreadableRows.report { row in
            let what = row.table == "message" ? "a stored message" : "a stored \(row.table) row"
            log.error(
                "\(what) could not be read; left out of every read (the rest is shown, sent and synced without it)",
                ["table": "\(row.table)", "row": "\(row.rowID)", "problem": row.problem])
        }
    }

    /// Starts everything, reloads on SIGHUP, and returns once the service group's graceful
    /// shutdown (SIGTERM/SIGINT) has stopped everything. Throws when the daemon cannot
    /// start, after logging why and releasing what was opened.
    public func run() async throws {
        // SIGHUP is trapped before READY=1: its default action ends the process, and a
        // manager may send it as soon as we say we are ready.
        let reloadSignals = await UnixSignalsSequence(trapping: .sighup)
        do {
            try await start()
        } catch {
            log.error("parleyd cannot start: \(error)")
            await stopEverything()
            throw error
        }
        for await _ in reloadSignals.cancelOnGracefulShutdown() {
            await reload()
        }
        await shutdown()
    }

    private func start() async throws {
        // Start-up can be long: opening an older store upgrades it first, minutes on a big
        // store or a slow disk. Until READY=1 the keeper asks systemd for more time while
        // the upgrade makes progress, and only then (StartTimeoutExtension), so the unit's
        // start timeout cannot kill a working upgrade in a restart loop, yet still stops a
        // hung one. It says nothing when there is nothing long to report.
        let storeUpgrade = StoreUpgradeProgress()
        let keeper = notifier.map {
            StartTimeoutKeeper(notifier: $0, log: self.log, work: StartTimeoutKeeper.work(of: storeUpgrade))
        }
        keeper?.start()
        defer { keeper?.stop() }
        let upgradeStarted = ContinuousClock.now
        let (keys, store, card, created) = try Self.loadIdentity(config: config, storeUpgrade: storeUpgrade)
        Self.logUnreadableRows(of: store, to: log)
        if storeUpgrade.completedMigrations > 0 {
            log.info(
                "upgraded the message store",
                [
                    "migrations": "\(storeUpgrade.completedMigrations)",
                    "seconds": "\((ContinuousClock.now - upgradeStarted).components.seconds)"
                ])
        }
        self.store = store
        if created { log.info("created a new identity", ["state_dir": config.stateDirectory]) }
        let psk = try loadNetworkKey()
        if let dir = config.downloadDirectory, let problem = DownloadDirectory.problem(dir) {
            throw StartError.downloadDirectory(problem)
        }
        var options = NodeOptions()
        options.handshakeTimeout = .milliseconds(Int64(config.handshakeTimeoutMilliseconds))
        options.pingInterval = .milliseconds(Int64(config.pingIntervalMilliseconds))
        options.deadAfter = .milliseconds(Int64(config.deadAfterMilliseconds))
        options.newIdentities = config.newIdentities
        options.quota = config.receiveQuota
        options.maxSessions = config.maxSessions
        options.downloadDirectory = config.downloadDirectory
        options.fileAutoAcceptBytes = config.fileAutoAcceptBytes
        options.unusedIdentityLifetime = .seconds(config.unusedIdentityLifetimeSeconds)
        let node = Node(loop: loop, store: store, keys: keys, card: card, options: options, log: log, networkKey: psk)
        node.ownIdentity.stateDirectory = config.stateDirectory
        self.node = node
        // Group commit: the message path's commits are synced off the loop, many per fsync,
        // and what they promise waits for it (Store+GroupCommit.swift). A failed sync leaves
        // what the disk holds unknown: stop, and let systemd restart parleyd on what it
        // really holds (nothing unsynced was answered or acknowledged).
        let loop = self.loop
        let log = self.log
        try store.startGroupCommit(
            hop: { work in loop.execute(work) },
            failed: { error in
                log.error("cannot sync the store to disk; stopping", ["error": "\(error)"])
                exit(EXIT_FAILURE)
            })
        if let needed = try? store.unfinishedOutgoingSourcePaths() {
            let swept = OutgoingCopies(stateDirectory: config.stateDirectory).sweep(keeping: needed)
            if swept > 0 { log.info("removed copies of files no transfer needs", ["count": "\(swept)"]) }
        }
        log.info(
            "identity",
            [
                "name": card.displayName, "fingerprint": card.fingerprint.description,
                "card_sequence": "\(card.sequence)"
            ])

        // TCP listeners.
        var bound: [String] = []
        let remembered = RememberedListenPort(stateDirectory: config.stateDirectory)
        var chosen = remembered.load()
        for address in config.listen {
            var channel: Channel?
            // Port 0: the port this state directory listened on before, if it is still free.
            if address.port == 0, let port = chosen, let wanted = try? HostPort(host: address.host, port: port) {
                channel = try? await bindListener(wanted, node: node)
                if channel == nil { log.warning("the remembered port is taken; choosing another", ["port": "\(port)"]) }
            }
            if channel == nil { channel = try await bindListener(address, node: node) }
            guard let channel else { continue }
            listeners.append(channel)
            if let a = channel.localAddress {
                bound.append(PeerConnection.describe(a))
                if address.port == 0, let port = a.port, let p = UInt16(exactly: port) {
                    chosen = p
                    remembered.save(p)
                }
            }
        }
        let peers = config.peers
        let mdns = config.mdnsEnabled
        let boundAddresses = bound
        let hook = NotifyHook(
            loop: loop, log: log, environment: environment,
            command: config.notifyCommand, includeBody: config.notifyIncludeBody)
        notifyHook = hook
        let readReceipts = config.readReceipts
        let info = self.info
        try await loop.submit {
            info.listenAddresses = boundAddresses
            // Announced to peers (`listenPorts`) so they can dial us back without mDNS.
            node.gossipDriver.listenAddresses = boundAddresses
            node.gossipDriver.listenPorts = boundAddresses.compactMap { UInt16($0.split(separator: ":").last ?? "") }
            info.mdns = mdns ? .unavailable : .off
            node.messageDriver.sendsReadReceipts = readReceipts
            node.addObserver(hook)
            node.start()
            for p in peers { node.addStaticPeer(p) }
        }.get()
        // Control socket: last, so a client never sees a half-started daemon.
        let path = Self.socketPath(for: config, environment: environment)
        let control = ControlServer(node: node, info: info, path: path)
        do { try control.start() } catch { throw StartError.control("\(path): \(error)") }
        self.control = control
        log.info("listening", ["tcp": bound.joined(separator: ","), "control": path])
        try await loop.submit {
            node.ownIdentity.onCardChanged = { [weak self] card in self?.discovery?.update(card: card) }
        }.get()
        if mdns {
            startDiscovery(node: node, port: bound.first.flatMap { UInt16($0.split(separator: ":").last ?? "") } ?? 0)
        }
        startSystemdIntegration()
        keeper?.stop()  // before READY=1: nothing about start-up may follow it
        sendReady(status: await statusLine())
    }

    private func bindListener(_ address: HostPort, node: Node) async throws -> Channel {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: PeerConnection.outboundWaterMark)
            .childChannelOption(.recvAllocator, value: NoiseFrameDecoder.receiveAllocator)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard node.admitInbound(remote: channel.remoteAddress) else {
                        channel.close(promise: nil)
                        return
                    }
                    try SessionSocketOptions.apply(to: channel, deadAfter: node.options.deadAfter.duration)
                    let conn = node.makeConnection(direction: .inbound, dialedAddress: nil)
                    try channel.pipeline.syncOperations.addHandler(NoiseFrameDecoder())
                    try channel.pipeline.syncOperations.addHandler(conn)
                }
            }
        do {
            return try await bootstrap.bind(host: address.host, port: Int(address.port)).get()
        } catch {
            // A host without IPv6: fall back to IPv4 for the wildcard.
            if address.host == "::" {
                if let ch = try? await bootstrap.bind(host: "0.0.0.0", port: Int(address.port)).get() {
                    log.warning("IPv6 unavailable; listening on IPv4 only", ["port": "\(address.port)"])
                    return ch
                }
            }
            throw StartError.listen(address.description, "\(error)")
        }
    }

    private func loadNetworkKey() throws(StartError) -> SecretBytes? {
        guard let path = config.networkKeyPath else { return nil }
        do {
            return try NetworkKeyFile.load(path: path)
        } catch {
            throw .networkKey(path, "\(error)")
        }
    }

    // MARK: Discovery

    private func startDiscovery(node: Node, port: UInt16) {
        let d = DiscoveryService(node: node, info: info, log: log, port: port)
        discovery = d
        d.start()
    }

    // MARK: systemd

    private func statusLine() async -> String {
        guard let node else { return "starting" }
        let (online, queued) =
            (try? await loop.submit { () -> (Int, Int) in
                (node.sessionDriver.table.count, (try? node.store.counts().queued) ?? 0)
            }.get()) ?? (0, 0)
        return "\(online) peer\(online == 1 ? "" : "s") online, \(queued) message\(queued == 1 ? "" : "s") queued"
    }

    private func startSystemdIntegration() {
        guard let notifier else { return }
        if let wd = try? WatchdogSettings.from(environment: environment, pid: getpid()) {
            let interval = TimeAmount.microseconds(Int64(wd.pingIntervalMicroseconds))
            // Pinged from the node's loop: a wedged loop stops the pings and systemd restarts us.
            loop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [log, loop] _ in
                Self.retryingWhileFull(notifier, on: loop, log: log, what: "the watchdog ping") { $0.watchdog() }
            }
        }
        // The status line rides on the node's keepalive tick instead of a timer of its own
        // (one wake-up fewer every 5 s for an idle daemon, issue 21), and is sent only
        // when it changed.
        guard let node else { return }
        loop.execute {
            var lastStatus: String?
            node.observers.onTick = {
                let q = (try? node.store.counts().queued) ?? 0
                let n = node.sessionDriver.table.count
                let status = "\(n) peer\(n == 1 ? "" : "s") online, \(q) message\(q == 1 ? "" : "s") queued"
                guard status != lastStatus else { return }
                lastStatus = status
                _ = notifier.status(status)
            }
        }
    }

    /// READY=1, sent again while the notify socket is full: dropped, systemd would wait
    /// for it until the start (or reload) timed out.
    private func sendReady(status: String) {
        guard let notifier else { return }
        Self.retryingWhileFull(notifier, on: loop, log: log, what: "READY=1") { $0.ready(status: status) }
    }

    /// `SystemdNotifier.sendRetryingWhileFull`, logging a notification given up on.
    private static func retryingWhileFull(
        _ notifier: SystemdNotifier, on loop: EventLoop, log: Logging.Logger, what: String,
        _ send: @escaping @Sendable (SystemdNotifier) -> Result<Void, SystemdNotifyError>
    ) {
        notifier.sendRetryingWhileFull(on: loop, send) { result in
            guard case .failure(let error) = result, error == .socketFull else { return }
            log.warning("could not tell systemd \(what)", ["error": "\(error)"])
        }
    }

    // MARK: Stop

    /// Graceful stop: STOPPING=1, stop accepting, withdraw the advertisement, say
    /// goodbye to peers, close the store.
    private func shutdown() async {
        log.info("shutting down")
        _ = notifier?.stopping()
        await stopEverything()
    }

    /// Releases whatever `start()` opened: the listeners first so nobody new connects, the
    /// store last so the node's goodbyes and final writes can still use it. Also used
    /// after a failed start, so any part may be missing.
    private func stopEverything() async {
        for l in listeners { try? await l.close().get() }
        listeners.removeAll()
        discovery?.stop()
        if let node {
            let hook = notifyHook
            try? await loop.submit {
                node.stop()
                hook?.stop()
            }.get()
        }
        if let control { try? await control.stop().get() }
        // Give goodbyes a moment to leave; never block shutdown on a stuck peer.
        try? await Task.sleep(for: .milliseconds(100))
        try? store?.close()
        try? await group.shutdownGracefully()
    }

    // MARK: Reload

    /// SIGHUP: re-read the configuration file; apply what can change at run time.
    private func reload() async {
        _ = notifier?.reloading()
        guard let reloader else {
            log.warning("reload: no configuration file to re-read")
            sendReady(status: await statusLine())
            return
        }
        do {
            let next = try reloader()
            let diff = next.reloadableDifferences(from: config)
            if !diff.needsRestart.isEmpty {
                log.warning(
                    "reload: these options need a restart to change",
                    ["options": diff.needsRestart.joined(separator: ",")])
            }
            let old = config
            config.name = next.name
            config.peers = next.peers
            config.logLevel = next.logLevel
            config.notifyCommand = next.notifyCommand
            config.notifyIncludeBody = next.notifyIncludeBody
            config.readReceipts = next.readReceipts
            logLevel.level = config.logLevel.loggerLevel
            let cfg = config
            if let node {
                let hook = notifyHook
                try await loop.submit {
                    node.messageDriver.sendsReadReceipts = cfg.readReceipts
                    hook?.update(command: cfg.notifyCommand, includeBody: cfg.notifyIncludeBody)
                    if cfg.name != old.name { try node.reissueCard(displayName: cfg.name, hostName: cfg.hostName) }
                    if cfg.peers != old.peers { node.setStaticPeers(cfg.peers) }
                }.get()
            }
            log.info("reloaded", ["changed": diff.reloadable.joined(separator: ",")])
        } catch {
            log.error("reload failed; keeping the running configuration: \(error)")
        }
        sendReady(status: await statusLine())
    }
}
