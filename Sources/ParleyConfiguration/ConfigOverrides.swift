import ParleyControlProtocol
import ParleyNodeCore
import ParleyCore

/// Options given on the command line: every field optional, nil meaning "not given".
/// The daemon's argument parser fills one of these; `DaemonConfiguration.merged`
/// layers it over the config file, so flags win.
///
/// Repeatable flags (`--listen`, `--peer`) replace the file's list rather than adding
/// to it, so the command line alone says where the daemon listens. Paths should be
/// made absolute by the argument parser (relative to its working directory).
public struct ConfigOverrides: Equatable, Sendable {
    public var stateDirectory: String?
    public var name: String?
    public var hostName: String?
    public var listen: [HostPort]?
    public var peers: [HostPort]?
    public var socketPath: String?
    public var mdnsEnabled: Bool?
    public var logLevel: LogLevel?
    public var networkKeyPath: String?
    public var notifyCommand: [String]?
    public var notifyIncludeBody: Bool?
    public var readReceipts: Bool?
    public var newIdentities: TrustDecision.NewIdentityPolicy?
    public var durability: Durability?
    public var handshakeTimeoutMilliseconds: Int?
    public var pingIntervalMilliseconds: Int?
    public var deadAfterMilliseconds: Int?
    /// The `quota_*` and `disk_floor_mib` options together (no flags: they are set in
    /// the file; tests and embedders set them here).
    public var receiveQuota: ReceiveQuota?
    /// `max_sessions` (no flag).
    public var maxSessions: Int?
    /// `download_dir` and `file_auto_accept_mib` (no flags: set in the file).
    public var downloadDirectory: String?
    public var fileAutoAcceptBytes: UInt64?
    /// `unused_identity_lifetime_s` (no flag).
    public var unusedIdentityLifetimeSeconds: Int?

    public init() {}

    /// Sets every given option on `configuration`.
    public func apply(to configuration: inout DaemonConfiguration) {
        if let stateDirectory { configuration.stateDirectory = stateDirectory }
        if let name { configuration.name = name }
        if let hostName { configuration.hostName = hostName }
        if let listen { configuration.listen = listen }
        if let peers { configuration.peers = peers }
        if let socketPath { configuration.socketPath = socketPath }
        if let mdnsEnabled { configuration.mdnsEnabled = mdnsEnabled }
        if let logLevel { configuration.logLevel = logLevel }
        if let networkKeyPath { configuration.networkKeyPath = networkKeyPath }
        if let notifyCommand { configuration.notifyCommand = notifyCommand }
        if let notifyIncludeBody { configuration.notifyIncludeBody = notifyIncludeBody }
        if let readReceipts { configuration.readReceipts = readReceipts }
        if let newIdentities { configuration.newIdentities = newIdentities }
        if let durability { configuration.durability = durability }
        if let handshakeTimeoutMilliseconds {
            configuration.handshakeTimeoutMilliseconds = handshakeTimeoutMilliseconds
        }
        if let pingIntervalMilliseconds { configuration.pingIntervalMilliseconds = pingIntervalMilliseconds }
        if let deadAfterMilliseconds { configuration.deadAfterMilliseconds = deadAfterMilliseconds }
        if let receiveQuota { configuration.receiveQuota = receiveQuota }
        if let maxSessions { configuration.maxSessions = maxSessions }
        if let downloadDirectory { configuration.downloadDirectory = downloadDirectory }
        if let fileAutoAcceptBytes { configuration.fileAutoAcceptBytes = fileAutoAcceptBytes }
        if let unusedIdentityLifetimeSeconds {
            configuration.unusedIdentityLifetimeSeconds = unusedIdentityLifetimeSeconds
        }
    }
}

extension DaemonConfiguration {
    /// The effective configuration: `defaults`, then the config file, then flags (flags
    /// win), validated as a whole. When neither file nor flags set `name`, it follows
    /// the final host name, so `--host-name bob` alone also names the node "bob".
    public static func merged(defaults: DaemonConfiguration, file: ConfigFile?, flags: ConfigOverrides)
        throws(ConfigError) -> DaemonConfiguration
    {
        var configuration = defaults
        try file?.apply(to: &configuration)
        flags.apply(to: &configuration)
        let nameGiven = flags.name != nil || file?[ConfigKey.name.rawValue] != nil
        if !nameGiven && configuration.hostName != defaults.hostName {
            configuration.name = displayName(fromHostName: configuration.hostName)
        }
        try configuration.validate()
        return configuration
    }
}
