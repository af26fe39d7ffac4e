import Logging

/// The log levels an operator can choose (`log_level`, `--log-level`): four of
/// swift-log's seven, the ones the daemon logs at. Kept as its own type so the
/// configuration accepts exactly these names and its error lists them.
public enum LogLevel: String, CaseIterable, Sendable, LosslessStringConvertible {
    case error
    case warning
    case info
    case debug

    public init?(_ description: String) { self.init(rawValue: description) }

    public var description: String { rawValue }

    /// The swift-log level a logger set to this choice filters at.
    public var loggerLevel: Logging.Logger.Level {
        switch self {
        case .error: .error
        case .warning: .warning
        case .info: .info
        case .debug: .debug
        }
    }
}
