import Logging
import NIOConcurrencyHelpers
import ParleyConfiguration

/// The daemon's log level, one box shared by every `ParleyLogHandler` made with it, so
/// that a SIGHUP reload sets it once and every component's copy of the logger follows.
///
/// swift-log wants a handler's `logLevel` to behave as a value (setting it on one copy
/// leaves the others alone); its documentation names a process-wide level changed at run
/// time as the accepted exception, to be built into the handler. This is that exception,
/// kept apart from `logLevel`: the handler follows this box unless a copy sets its own.
public final class SharedLogLevel: Sendable {
    private let box: NIOLockedValueBox<Logging.Logger.Level>

    public init(_ level: Logging.Logger.Level) {
        self.box = NIOLockedValueBox(level)
    }

    public var level: Logging.Logger.Level {
        get { box.withLockedValue { $0 } }
        set { box.withLockedValue { $0 = newValue } }
    }
}
