/// How much the daemon logs. Ordered from most to least severe: a logger at level
/// `info` emits `error`, `warning` and `info` events and drops `debug` ones.
public enum LogLevel: String, CaseIterable, Comparable, Sendable, LosslessStringConvertible {
    case error
    case warning
    case info
    case debug

    public init?(_ description: String) { self.init(rawValue: description) }

    public var description: String { rawValue }

    /// Severity rank: lower is more severe.
    private var rank: Int {
        switch self {
        case .error: 0
        case .warning: 1
        case .info: 2
        case .debug: 3
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rank < rhs.rank }

    /// syslog(3) priority, which journald reads from a "<N>" line prefix.
    public var syslogPriority: Int {
        switch self {
        case .error: 3    // LOG_ERR
        case .warning: 4  // LOG_WARNING
        case .info: 6     // LOG_INFO
        case .debug: 7    // LOG_DEBUG
        }
    }
}
