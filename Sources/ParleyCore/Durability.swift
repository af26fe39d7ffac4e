/// How hard a commit works to survive power loss. Either way the database is WAL and
/// survives a crash of parleyd itself. Also the daemon's `durability` option
/// (`--durability`, parleyd.toml), whose accepted names are the raw values. It lives in
/// ParleyCore, not beside the store that applies it, so the configuration parser (and the
/// fuzz build that links it) does not compile GRDB.
public enum Durability: String, CaseIterable, Sendable, LosslessStringConvertible {
    /// Every commit is fsynced to the WAL before anything it promises is acknowledged, so
    /// a message acknowledged to a client or a peer survives power loss. The default. The
    /// daemon's message path commits at synchronous=NORMAL and syncs many commits with one
    /// fdatasync off its event loop (group commit, ParleyStore's Store+GroupCommit.swift);
    /// every other commit is `synchronous = FULL`.
    case full
    /// `synchronous = NORMAL`: commits are fsynced only at checkpoints. Much faster on slow
    /// disks, but the last commits before a power loss (not a process crash) can roll back.
    case normal

    public init?(_ description: String) { self.init(rawValue: description) }

    public var description: String { rawValue }
}
