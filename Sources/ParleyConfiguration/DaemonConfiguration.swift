import Foundation
import ParleyControlProtocol
import ParleyNodeCore
import ParleyCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Every option of parleyd with its effective value. Built once from defaults, the
/// config file and flags (`merged(defaults:file:flags:)`), then passed into the daemon;
/// there is no global configuration.
public struct DaemonConfiguration: Equatable, Sendable {
    /// `state_dir`, `--state-dir`: keys, database, everything that must survive a restart.
    public var stateDirectory: String
    /// `name`, `--name`: display name shown to other people in this node's card.
    public var name: String
    /// `host_name`, `--host-name`: the host name advertised over mDNS.
    public var hostName: String
    /// `listen`, `--listen` (repeatable): where to accept peer connections.
    public var listen: [HostPort]
    /// `peers`, `--peer` (repeatable): peers dialled directly, in addition to mDNS.
    public var peers: [HostPort]
    /// `socket`, `--socket`: control socket path; nil means the daemon's own default.
    public var socketPath: String?
    /// `mdns`, `--no-mdns`: announce and browse with mDNS (avahi).
    public var mdnsEnabled: Bool
    /// `log_level`, `--log-level`.
    public var logLevel: LogLevel
    /// `network_key`, `--network-key`: file holding the LAN's shared network key, if any.
    public var networkKeyPath: String?
    /// `notify_command`: program and arguments run for each incoming message; nil = none.
    public var notifyCommand: [String]?
    /// `notify_include_body`: pass the message text to notify_command (off: only the sender).
    public var notifyIncludeBody: Bool
    /// `read_receipts`: tell senders when their message was read.
    public var readReceipts: Bool
    /// `new_identities`: "accept" pins a key never seen on first use (the default);
    /// "hold" records it as awaiting approval, with no session until a person accepts it.
    public var newIdentities: TrustDecision.NewIdentityPolicy = .accept
    /// `durability`: how often the store fsyncs.
    public var durability: Durability
    /// `handshake_timeout_ms`: a peer that has not finished the Noise handshake by then is dropped.
    public var handshakeTimeoutMilliseconds: Int
    /// `ping_interval_ms`: idle sessions send a ping this often.
    public var pingIntervalMilliseconds: Int
    /// `dead_after_ms`: a session silent this long is closed and the peer marked offline.
    public var deadAfterMilliseconds: Int
    /// `quota_peer_messages`, `quota_peer_mib`, `quota_verified_peer_*`, `quota_total_*`,
    /// `disk_floor_mib`: what the node keeps from peers (`ReceiveQuota`).
    public var receiveQuota: ReceiveQuota = .standard
    /// `max_sessions`: established sessions in total (`NodeLimits.maxSessions`).
    public var maxSessions: Int = NodeLimits.maxSessions
    /// `download_dir`: where received files go (nil: `<state_dir>/files`).
    public var downloadDirectory: String?
    /// `file_auto_accept_mib`: files from verified peers up to this size arrive without asking.
    public var fileAutoAcceptBytes: UInt64 = FileAcceptPolicy.defaultAutoAcceptBytes
    /// `unused_identity_lifetime_s`: how long a key that never exchanged a message is kept
    /// after it was last seen (`NodeLimits.unusedIdentityLifetime`, a day).
    public var unusedIdentityLifetimeSeconds: Int = Int(NodeLimits.unusedIdentityLifetime.components.seconds)

    /// The IANA-unassigned port parleyd uses when none is given.
    public static let defaultPort: UInt16 = 7744
    /// Listen on every address, IPv6 and (through the dual-stack socket) IPv4.
    public static let defaultListen = "[::]:7744"
    /// Three messages over a LAN take milliseconds; 5 s tolerates a loaded machine and
    /// still frees a half-open connection soon.
    public static let defaultHandshakeTimeoutMilliseconds = 5_000
    /// Ping a peer only after ten minutes of silence (`KeepalivePolicy.defaultPingInterval`):
    /// a cut link is the kernel keepalive's to report, and 1,000 idle sessions must not
    /// wake a laptop more than twice a second (issue 21).
    public static let defaultPingIntervalMilliseconds =
        Int(KeepalivePolicy.defaultPingInterval.components.seconds) * 1_000
    /// A ping unanswered, or a cut link seen by the kernel's three probes, for this long
    /// ends the session: one lost probe or a brief stall does not.
    public static let defaultDeadAfterMilliseconds = Int(KeepalivePolicy.defaultDeadAfter.components.seconds) * 1_000
    /// Timer options must lie in this range: 10 ms lets tests run fast, an hour is
    /// beyond any sane setting and keeps arithmetic on them far from overflow.
    public static let timerRangeMilliseconds = 10...3_600_000
    /// Names travel in signed cards on every handshake; 64 bytes is a long name and
    /// keeps cards small.
    public static let maxNameBytes = 64
    /// sun_path is 108 bytes on Linux including the terminating NUL.
    public static let maxSocketPathBytes = 107
    /// Linux PATH_MAX, including the terminating NUL.
    public static let maxPathBytes = 4095
    /// Name used when the host name yields nothing usable.
    public static let fallbackName = "parley"

    /// Defaults for a host called `hostName`, everything else at its documented default.
    public init(stateDirectory: String, hostName: String) {
        self.stateDirectory = stateDirectory
        self.hostName = hostName
        self.name = Self.displayName(fromHostName: hostName)
        // The literal is a valid HostPort: a failure here is a programming error.
        self.listen = [HostPort(Self.defaultListen)!]
        self.peers = []
        self.socketPath = nil
        self.mdnsEnabled = true
        self.logLevel = .info
        self.networkKeyPath = nil
        self.notifyCommand = nil
        self.notifyIncludeBody = false
        self.readReceipts = true
        self.durability = .full
        self.handshakeTimeoutMilliseconds = Self.defaultHandshakeTimeoutMilliseconds
        self.pingIntervalMilliseconds = Self.defaultPingIntervalMilliseconds
        self.deadAfterMilliseconds = Self.defaultDeadAfterMilliseconds
    }

    /// Defaults computed from an environment, with no I/O: the state directory is
    /// $STATE_DIRECTORY (set by systemd's StateDirectory=), else $XDG_STATE_HOME/parley,
    /// else ~/.local/state/parley.
    public static func defaults(environment: [String: String], hostName: String, homeDirectory: String?)
        -> DaemonConfiguration
    {
        let stateDirectory: String
        if let systemd = firstAbsolutePath(in: environment["STATE_DIRECTORY"]) {
            stateDirectory = systemd
        } else if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") {
            // The XDG spec says relative values are invalid and must be ignored.
            stateDirectory = xdg + "/parley"
        } else if let home = homeDirectory, home.hasPrefix("/") {
            stateDirectory = home + "/.local/state/parley"
        } else {
            // No HOME and no passwd entry: the system location is the least surprising.
            stateDirectory = "/var/lib/parley"
        }
        return DaemonConfiguration(stateDirectory: stateDirectory, hostName: hostName)
    }

    /// Defaults for this process: its environment, gethostname(), its home directory.
    public static func systemDefaults(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> DaemonConfiguration {
        defaults(
            environment: environment, hostName: currentHostName(),
            homeDirectory: homeDirectory(environment: environment))
    }

    /// The options a running daemon can pick up on reload vs those that differ from
    /// `other` but need a restart, as config keys in declaration order.
    public func reloadableDifferences(from other: DaemonConfiguration)
        -> (reloadable: [String], needsRestart: [String])
    {
        var reloadable: [String] = []
        var needsRestart: [String] = []
        for key in ConfigKey.allCases where differs(from: other, in: key) {
            if key.isReloadable { reloadable.append(key.rawValue) } else { needsRestart.append(key.rawValue) }
        }
        return (reloadable, needsRestart)
    }

    private func differs(from other: DaemonConfiguration, in key: ConfigKey) -> Bool {
        switch key {
        case .stateDir: stateDirectory != other.stateDirectory
        case .name: name != other.name
        case .hostName: hostName != other.hostName
        case .listen: listen != other.listen
        case .peers: peers != other.peers
        case .socket: socketPath != other.socketPath
        case .mdns: mdnsEnabled != other.mdnsEnabled
        case .logLevel: logLevel != other.logLevel
        case .networkKey: networkKeyPath != other.networkKeyPath
        case .notifyCommand: notifyCommand != other.notifyCommand
        case .notifyIncludeBody: notifyIncludeBody != other.notifyIncludeBody
        case .readReceipts: readReceipts != other.readReceipts
        case .newIdentities: newIdentities != other.newIdentities
        case .durability: durability != other.durability
        case .handshakeTimeoutMs: handshakeTimeoutMilliseconds != other.handshakeTimeoutMilliseconds
        case .pingIntervalMs: pingIntervalMilliseconds != other.pingIntervalMilliseconds
        case .deadAfterMs: deadAfterMilliseconds != other.deadAfterMilliseconds
        case .quotaPeerMessages, .quotaPeerMib, .quotaVerifiedPeerMessages, .quotaVerifiedPeerMib, .quotaTotalMessages,
            .quotaTotalMib, .diskFloorMib:
            receiveQuota != other.receiveQuota
        case .maxSessions: maxSessions != other.maxSessions
        case .downloadDir: downloadDirectory != other.downloadDirectory
        case .fileAutoAcceptMib: fileAutoAcceptBytes != other.fileAutoAcceptBytes
        case .unusedIdentityLifetimeS: unusedIdentityLifetimeSeconds != other.unusedIdentityLifetimeSeconds
        }
    }

    // MARK: - Helpers shared with the config file and overrides

    /// "alice-laptop.example.org" -> "alice-laptop": what people call the machine.
    public static func displayName(fromHostName hostName: String) -> String {
        let label =
            hostName.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        guard !label.isEmpty, problem(withName: label) == nil else { return fallbackName }
        return label
    }

    /// systemd passes one path per StateDirectory=/ConfigurationDirectory= entry,
    /// colon-separated; ours is the first.
    static func firstAbsolutePath(in value: String?) -> String? {
        guard let first = value?.split(separator: ":").first, first.hasPrefix("/") else { return nil }
        return String(first)
    }

    public static func currentHostName() -> String {
        // HOST_NAME_MAX is 64 on Linux; 256 covers other systems and the NUL.
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "localhost" : name
    }

    static func homeDirectory(environment: [String: String]) -> String? {
        if let home = environment["HOME"], home.hasPrefix("/") { return home }
        // A system service may have no HOME; ask the password database.
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(getuid(), &entry, &buffer, buffer.count, &result) == 0, result != nil,
            let directory = entry.pw_dir
        else { return nil }
        return String(cString: directory)
    }
}
