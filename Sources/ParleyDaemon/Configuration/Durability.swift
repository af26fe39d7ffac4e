/// How hard the store works to keep an accepted message across a power cut.
public enum Durability: String, CaseIterable, Sendable, LosslessStringConvertible {
    /// fsync on every commit: a message acknowledged to a client or peer survives a
    /// crash of the machine, not only of the process (SQLite synchronous=FULL).
    case full
    /// Fewer fsyncs (SQLite WAL with synchronous=NORMAL): survives a process crash,
    /// the last commits may be lost on power failure. For slow disks and tests.
    case normal

    public init?(_ description: String) { self.init(rawValue: description) }

    public var description: String { rawValue }
}
