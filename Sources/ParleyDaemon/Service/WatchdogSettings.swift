import ParleyControlProtocol

/// The systemd watchdog as configured for this process (WatchdogSec= in the unit):
/// systemd sets $WATCHDOG_USEC, and $WATCHDOG_PID to say which process must ping.
public struct WatchdogSettings: Equatable, Sendable {
    /// Time after which systemd considers the service hung if no "WATCHDOG=1" arrived.
    public let timeoutMicroseconds: UInt64

    /// Longest timeout accepted: a day. systemd's own values are seconds to minutes;
    /// the cap keeps arithmetic on it far from overflow.
    public static let maxTimeoutMicroseconds: UInt64 = 86_400 * 1_000_000

    public init(timeoutMicroseconds: UInt64) {
        self.timeoutMicroseconds = timeoutMicroseconds
    }

    /// How often to send "WATCHDOG=1": half the timeout, as sd_watchdog_enabled(3)
    /// advises, so one late ping does not get the service killed.
    public var pingIntervalMicroseconds: UInt64 { timeoutMicroseconds / 2 }

    public var pingInterval: Duration { .microseconds(Int64(pingIntervalMicroseconds)) }

    /// The settings for process `pid`, or nil when the watchdog is off or meant for
    /// another process (WATCHDOG_PID names a different pid: e.g. we are a child that
    /// inherited the environment). Malformed values throw, so they can be logged.
    public static func from(environment: [String: String], pid: Int32) throws(WatchdogSettingsError)
        -> WatchdogSettings?
    {
        guard let usecText = environment["WATCHDOG_USEC"] else { return nil }
        if let pidText = environment["WATCHDOG_PID"] {
            guard let target = parseDecimal(pidText), target > 0, target <= UInt64(Int32.max) else {
                throw .invalidPID(TextEscaping.quoted(pidText))
            }
            guard target == UInt64(pid) else { return nil }
        }
        guard let timeout = parseDecimal(usecText), timeout > 0, timeout <= maxTimeoutMicroseconds else {
            throw .invalidTimeout(TextEscaping.quoted(usecText))
        }
        return WatchdogSettings(timeoutMicroseconds: timeout)
    }

    /// Plain decimal digits only: no sign, no spaces, bounded length.
    private static func parseDecimal(_ text: String) -> UInt64? {
        guard !text.isEmpty, text.utf8.count <= 19,
            text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { return nil }
        return UInt64(text)
    }
}

/// Why $WATCHDOG_USEC / $WATCHDOG_PID could not be used.
public enum WatchdogSettingsError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidTimeout(String)
    case invalidPID(String)

    public var description: String {
        switch self {
        case .invalidTimeout(let text):
            "WATCHDOG_USEC=\(text) is not a timeout in microseconds (1...\(WatchdogSettings.maxTimeoutMicroseconds))"
        case .invalidPID(let text):
            "WATCHDOG_PID=\(text) is not a process id"
        }
    }
}
