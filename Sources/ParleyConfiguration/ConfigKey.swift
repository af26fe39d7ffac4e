/// The options of parleyd, by their config-file key. Flags use the same words with
/// dashes (`log_level` is `--log-level`), except `mdns`, whose flag is `--no-mdns`.
public enum ConfigKey: String, CaseIterable, Sendable {
    case stateDir = "state_dir"
    case name
    case hostName = "host_name"
    case listen
    case peers
    case socket
    case mdns
    case logLevel = "log_level"
    case networkKey = "network_key"
    case notifyCommand = "notify_command"
    case notifyIncludeBody = "notify_include_body"
    case readReceipts = "read_receipts"
    case newIdentities = "new_identities"
    case durability
    case handshakeTimeoutMs = "handshake_timeout_ms"
    case pingIntervalMs = "ping_interval_ms"
    case deadAfterMs = "dead_after_ms"
    // The receive quota and the disk floor (issue 15; docs/PROTOCOL.md "Limits").
    case quotaPeerMessages = "quota_peer_messages"
    case quotaPeerMib = "quota_peer_mib"
    case quotaVerifiedPeerMessages = "quota_verified_peer_messages"
    case quotaVerifiedPeerMib = "quota_verified_peer_mib"
    case quotaTotalMessages = "quota_total_messages"
    case quotaTotalMib = "quota_total_mib"
    case diskFloorMib = "disk_floor_mib"
    case maxSessions = "max_sessions"
    // Files (issue 18; docs/PROTOCOL.md "Files").
    case downloadDir = "download_dir"
    case fileAutoAcceptMib = "file_auto_accept_mib"
    /// How long an identity that never exchanged a message is remembered after it was last
    /// seen (`NodeLimits.unusedIdentityLifetime`).
    case unusedIdentityLifetimeS = "unused_identity_lifetime_s"

    /// Options a running daemon can adopt on SIGHUP. The rest shape sockets, files and
    /// the identity the daemon announces, so changing them needs a restart.
    public var isReloadable: Bool {
        switch self {
        case .name, .peers, .logLevel, .notifyCommand, .notifyIncludeBody, .readReceipts:
            true
        case .stateDir, .hostName, .listen, .socket, .mdns, .networkKey, .durability, .newIdentities,
            .handshakeTimeoutMs, .pingIntervalMs, .deadAfterMs,
            .quotaPeerMessages, .quotaPeerMib, .quotaVerifiedPeerMessages, .quotaVerifiedPeerMib, .quotaTotalMessages,
            .quotaTotalMib, .diskFloorMib, .maxSessions, .downloadDir, .fileAutoAcceptMib, .unusedIdentityLifetimeS:
            false
        }
    }

    /// Keys longer than this get no "did you mean" hint: the edit-distance table is
    /// quadratic and no real key is near that long.
    static let maxSuggestionInputLength = 64

    /// The known key closest to a mistyped one ("lisen" -> listen, "log-level" ->
    /// log_level), or nil when nothing is plausibly meant.
    public static func suggestion(for unknown: String) -> ConfigKey? {
        let normalized = String(unknown.lowercased().map { $0 == "-" ? "_" : $0 })
        guard normalized.utf8.count <= maxSuggestionInputLength else { return nil }
        if let exact = ConfigKey(rawValue: normalized) { return exact }
        var best: (key: ConfigKey, distance: Int)?
        for key in allCases {
            let distance = editDistance(Array(normalized.utf8), Array(key.rawValue.utf8))
            // Allow about one typo per three characters, at least two: enough for
            // "lisen" or "reciepts", not so loose that any short word matches.
            let allowed = max(2, key.rawValue.utf8.count / 3)
            if distance <= allowed, distance < (best?.distance ?? Int.max) {
                best = (key, distance)
            }
        }
        return best?.key
    }

    /// Levenshtein distance, one row at a time.
    private static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
