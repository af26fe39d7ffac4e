/// The environment a `notify_command` runs with: the daemon's own, minus what belongs to
/// the daemon alone, plus the message's metadata. Pure, so every rule is unit-tested.
enum NotifyHookEnvironment {
    /// Variables that address the daemon's service manager or sockets: a hook that kept
    /// NOTIFY_SOCKET could tell systemd the daemon is stopping, or ping its watchdog.
    static let removedVariables: Set<String> = [
        "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"
    ]

    static let from = "PARLEY_FROM"
    static let fromFingerprint = "PARLEY_FROM_FINGERPRINT"
    static let messageID = "PARLEY_MESSAGE_ID"
    static let receivedAt = "PARLEY_RECEIVED_AT"
    static let body = "PARLEY_BODY"
    /// `#name` of the room a room message was sent to; unset for a direct message, and
    /// never inherited from the daemon's environment.
    static let room = "PARLEY_ROOM"
    /// For a file offered to us or received: its (sanitized) name and size in bytes, and
    /// `offered` or `completed`; unset for a message.
    static let fileName = "PARLEY_FILE_NAME"
    static let fileSize = "PARLEY_FILE_SIZE"
    static let fileEvent = "PARLEY_FILE_EVENT"

    /// Every variable the hook contract defines. Values the daemon itself inherited under
    /// these names are dropped, so a hook never sees a stale or forged one.
    static let hookVariables: Set<String> = [
        from, fromFingerprint, messageID, receivedAt, body, room, fileName, fileSize, fileEvent
    ]

    /// What the hook is told about one incoming message.
    struct Message: Equatable {
        /// Display name from the sender's signed card (free of control characters).
        var fromName: String
        var fromFingerprint: String
        var id: String
        /// Unix milliseconds, this node's clock.
        var receivedAt: Int64
        var body: String
        var room: String?
        /// A file event: the file's name and size, and `offered` or `completed`.
        var file: (name: String, size: Int64, event: String)? = nil

        static func == (a: Message, b: Message) -> Bool {
            a.fromName == b.fromName && a.fromFingerprint == b.fromFingerprint && a.id == b.id
                && a.receivedAt == b.receivedAt && a.body == b.body && a.room == b.room
                && a.file?.name == b.file?.name && a.file?.size == b.file?.size && a.file?.event == b.file?.event
        }
    }

    /// `KEY=VALUE` strings for execve, sorted by key. The body is included only when
    /// `includeBody` is set; a NUL in it (which execve cannot carry) becomes U+FFFD.
    static func make(base: [String: String], message: Message, includeBody: Bool) -> [String] {
        var env = base.filter { key, value in
            !removedVariables.contains(key) && !hookVariables.contains(key)
                && !key.isEmpty && !key.contains("=") && !key.utf8.contains(0) && !value.utf8.contains(0)
        }
        env[from] = withoutNUL(message.fromName)
        env[fromFingerprint] = message.fromFingerprint
        env[messageID] = message.id
        env[receivedAt] = String(message.receivedAt)
        if let room = message.room { env[Self.room] = withoutNUL(room) }
        if let file = message.file {
            env[fileName] = withoutNUL(file.name)
            env[fileSize] = String(file.size)
            env[fileEvent] = file.event
        }
        if includeBody { env[body] = withoutNUL(message.body) }
        return env.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
    }

    static func withoutNUL(_ text: String) -> String {
        guard text.utf8.contains(0) else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.map { $0 == "\0" ? "\u{FFFD}" : $0 }))
    }
}
