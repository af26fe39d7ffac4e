import Logging

/// The daemon logs through apple's swift-log. This alias lets the files of this module
/// name the type `Logger` without each importing `Logging` (the node, network and
/// control files log but need nothing else from swift-log).
typealias Logger = Logging.Logger

/// Parley's call form for swift-log: a message and flat string metadata,
/// `log.info("session up", ["peer": name])`. Every value the daemon logs is text (names,
/// fingerprints, addresses, errors), so `[String: String]` keeps call sites to one line;
/// the handler escapes the values, which may come from a peer. One-argument calls
/// (`log.info("shutting down")`) are swift-log's own.
extension Logging.Logger {
    func error(
        _ message: String, _ metadata: [String: String],
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        log(.error, message, metadata, file: file, function: function, line: line)
    }

    func warning(
        _ message: String, _ metadata: [String: String],
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        log(.warning, message, metadata, file: file, function: function, line: line)
    }

    func info(
        _ message: String, _ metadata: [String: String],
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        log(.info, message, metadata, file: file, function: function, line: line)
    }

    func debug(
        _ message: String, _ metadata: [String: String],
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        log(.debug, message, metadata, file: file, function: function, line: line)
    }

    /// The metadata is converted only when the level is enabled (swift-log's arguments
    /// are autoclosures).
    func log(
        _ level: Logging.Logger.Level, _ message: String, _ metadata: [String: String],
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        log(
            level: level, "\(message)", metadata: metadata.mapValues { .string($0) },
            file: file, function: function, line: line)
    }
}
