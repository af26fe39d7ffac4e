import Foundation
import Logging
import ParleyConfiguration

/// parleyd's swift-log handler: one line per event, journald's "<N>" priority prefix or
/// a human format with a timestamp (`LogFormat`), metadata as sorted key=value pairs,
/// untrusted text escaped and bounded (`LogLine`).
///
/// A value, as swift-log requires: metadata and a `logLevel` set on one copy stay on that
/// copy. Two parts are shared on purpose: the output (so lines stay whole) and, unless a
/// copy sets its own `logLevel`, the daemon-wide level in `SharedLogLevel`, which a config
/// reload changes for every component at once.
public struct ParleyLogHandler: LogHandler {
    public let format: LogFormat
    private let sharedLevel: SharedLogLevel
    /// Set only when this copy's `logLevel` was assigned; nil follows `sharedLevel`.
    private var ownLevel: Logging.Logger.Level?
    private let output: LogOutput
    private let clock: @Sendable () -> Date

    public var metadata: Logging.Logger.Metadata = [:]
    public var metadataProvider: Logging.Logger.MetadataProvider?

    /// `clock` supplies human-format timestamps.
    public init(
        format: LogFormat, level: SharedLogLevel, output: LogOutput = .standardError,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.format = format
        self.sharedLevel = level
        self.output = output
        self.clock = clock
    }

    public var logLevel: Logging.Logger.Level {
        get { ownLevel ?? sharedLevel.level }
        set { ownLevel = newValue }
    }

    public subscript(metadataKey key: String) -> Logging.Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        // The event's own metadata wins over the provider's, which wins over the handler's.
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        output.writeLine(
            LogLine.format(
                level: event.level, message: event.message.description, metadata: merged,
                format: format, time: clock()))
    }
}
