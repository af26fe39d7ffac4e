/// How hard a commit works to survive power loss. Either way the database is WAL and
/// survives a crash of parleyd itself. Also the daemon's `durability` option
/// (`--durability`, parleyd.toml), whose accepted names are the raw values. It lives in
/// ParleyCore, not beside the store that applies it, so the configuration parser (and the
/// fuzz build that links it) does not compile GRDB.
public enum Durability: String, CaseIterable, Sendable, LosslessStringConvertible {
    /// `synchronous = FULL`: every commit is fsynced to the WAL before it returns, so a
    /// message acknowledged to a client survives power loss and sequence numbers are never
    /// reused. The default.
    case full
    /// `synchronous = NORMAL`: commits are fsynced only at checkpoints. Much faster on slow
    /// disks, but the last commits before a power loss (not a process crash) can roll back.
    case normal

    public init?(_ description: String) { self.init(rawValue: description) }

    public var description: String { rawValue }
}
