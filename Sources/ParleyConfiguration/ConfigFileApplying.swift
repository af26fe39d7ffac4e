import ParleyControlProtocol
import ParleyNodeCore
import ParleyCore

/// Turning parsed entries into option values: the key must exist and the value must
/// have the right type and make sense; errors point at the line.
extension ConfigFile {
    /// Sets every option present in the file on `configuration`, in file order. Options
    /// absent from the file keep their current values.
    public func apply(to configuration: inout DaemonConfiguration) throws(ConfigError) {
        for entry in entries {
            try apply(entry, to: &configuration)
        }
    }

    private func apply(_ entry: Entry, to configuration: inout DaemonConfiguration) throws(ConfigError) {
        let reader = ValueReader(entry: entry, location: ConfigLocation(file: fileName, line: entry.line))
        guard let key = ConfigKey(rawValue: entry.key) else {
            throw .unknownKey(
                reader.location, key: entry.key, suggestion: ConfigKey.suggestion(for: entry.key)?.rawValue)
        }
        switch key {
        case .stateDir:
            configuration.stateDirectory = try reader.string(check: DaemonConfiguration.problem(withPath:))
        case .name:
            configuration.name = try reader.string(check: DaemonConfiguration.problem(withName:))
        case .hostName:
            configuration.hostName = try reader.string(check: DaemonConfiguration.problem(withHostName:))
        case .listen:
            let addresses = try reader.hostPorts()
            if let problem = DaemonConfiguration.problem(withListen: addresses) {
                throw .invalidEntry(reader.location, key: entry.key, reason: problem)
            }
            configuration.listen = addresses
        case .peers:
            configuration.peers = try reader.hostPorts()
        case .socket:
            configuration.socketPath = try reader.string(check: DaemonConfiguration.problem(withSocketPath:))
        case .mdns:
            configuration.mdnsEnabled = try reader.boolean()
        case .logLevel:
            configuration.logLevel = try reader.choice(LogLevel.self)
        case .networkKey:
            configuration.networkKeyPath = try reader.string(check: DaemonConfiguration.problem(withPath:))
        case .notifyCommand:
            configuration.notifyCommand = try reader.strings(check: DaemonConfiguration.problem(withNotifyCommand:))
        case .notifyIncludeBody:
            configuration.notifyIncludeBody = try reader.boolean()
        case .readReceipts:
            configuration.readReceipts = try reader.boolean()
        case .newIdentities:
            configuration.newIdentities = try reader.choice(TrustDecision.NewIdentityPolicy.self)
        case .durability:
            configuration.durability = try reader.choice(Durability.self)
        case .handshakeTimeoutMs:
            configuration.handshakeTimeoutMilliseconds = try reader.milliseconds()
        case .pingIntervalMs:
            configuration.pingIntervalMilliseconds = try reader.milliseconds()
        case .deadAfterMs:
            configuration.deadAfterMilliseconds = try reader.milliseconds()
        case .quotaPeerMessages:
            configuration.receiveQuota.stranger.messages = try reader.quotaCount()
        case .quotaPeerMib:
            configuration.receiveQuota.stranger.bytes = try reader.mebibytes()
        case .quotaVerifiedPeerMessages:
            configuration.receiveQuota.correspondent.messages = try reader.quotaCount()
        case .quotaVerifiedPeerMib:
            configuration.receiveQuota.correspondent.bytes = try reader.mebibytes()
        case .quotaTotalMessages:
            configuration.receiveQuota.total.messages = try reader.quotaCount()
        case .quotaTotalMib:
            configuration.receiveQuota.total.bytes = try reader.mebibytes()
        case .maxSessions:
            configuration.maxSessions = try reader.quotaCount()
            guard configuration.maxSessions <= 65_536 else {
                throw .invalidEntry(reader.location, key: entry.key, reason: "must be at most 65536")
            }
        case .diskFloorMib:
            configuration.receiveQuota.diskFloorBytes = try reader.mebibytes()
        case .downloadDir:
            configuration.downloadDirectory = try reader.string(check: DaemonConfiguration.problem(withPath:))
        case .fileAutoAcceptMib:
            configuration.fileAutoAcceptBytes = UInt64(try reader.mebibytes())
        case .unusedIdentityLifetimeS:
            configuration.unusedIdentityLifetimeSeconds = try reader.seconds()
        }
    }
}

/// Reads one entry's value as the type its key needs.
private struct ValueReader {
    let entry: ConfigFile.Entry
    let location: ConfigLocation

    private func mismatch(_ expected: String) -> ConfigError {
        .invalidValue(location, key: entry.key, expected: expected, got: entry.value.description)
    }

    private func invalid(_ reason: String) -> ConfigError {
        .invalidEntry(location, key: entry.key, reason: reason)
    }

    func string(check: (String) -> String?) throws(ConfigError) -> String {
        guard case .string(let text) = entry.value else { throw mismatch("a string") }
        if let problem = check(text) { throw invalid(problem) }
        return text
    }

    func strings(check: ([String]) -> String?) throws(ConfigError) -> [String] {
        guard case .stringArray(let items) = entry.value else { throw mismatch("an array of strings") }
        if let problem = check(items) { throw invalid(problem) }
        return items
    }

    /// A count of messages for a quota: 1 to 100,000,000.
    func quotaCount() throws(ConfigError) -> Int {
        let expected = "an integer from 1 to 100000000"
        guard case .integer(let value) = entry.value, let n = Int(exactly: value), (1...100_000_000).contains(n) else {
            throw mismatch(expected)
        }
        return n
    }

    /// A duration in seconds: 1 s (tests) to about ten years.
    func seconds() throws(ConfigError) -> Int {
        let expected = "an integer number of seconds from 1 to 315360000"
        guard case .integer(let value) = entry.value, let n = Int(exactly: value), (1...315_360_000).contains(n) else {
            throw mismatch(expected)
        }
        return n
    }

    /// A size in MiB (0 to 16 TiB), returned in bytes.
    func mebibytes() throws(ConfigError) -> Int {
        let expected = "an integer number of MiB from 0 to 16777216"
        guard case .integer(let value) = entry.value, let n = Int(exactly: value), (0...16_777_216).contains(n) else {
            throw mismatch(expected)
        }
        return n << 20
    }

    func boolean() throws(ConfigError) -> Bool {
        guard case .boolean(let flag) = entry.value else { throw mismatch("true or false") }
        return flag
    }

    func choice<Choice: RawRepresentable & CaseIterable>(_ type: Choice.Type) throws(ConfigError) -> Choice
    where Choice.RawValue == String {
        let expected = "one of " + Choice.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        guard case .string(let text) = entry.value, let choice = Choice(rawValue: text) else {
            throw mismatch(expected)
        }
        return choice
    }

    func milliseconds() throws(ConfigError) -> Int {
        let range = DaemonConfiguration.timerRangeMilliseconds
        let expected = "an integer number of milliseconds from \(range.lowerBound) to \(range.upperBound)"
        guard case .integer(let value) = entry.value else { throw mismatch(expected) }
        guard let milliseconds = Int(exactly: value), range.contains(milliseconds) else { throw mismatch(expected) }
        return milliseconds
    }

    func hostPorts() throws(ConfigError) -> [HostPort] {
        guard case .stringArray(let items) = entry.value else {
            throw mismatch("an array of \"HOST:PORT\" strings, like [\"[::]:7744\"]")
        }
        var addresses: [HostPort] = []
        for item in items {
            do {
                addresses.append(try HostPort(parsing: item))
            } catch {
                throw invalid(error.description)
            }
        }
        return addresses
    }
}
