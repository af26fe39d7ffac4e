import ParleyControlProtocol

/// When a staged upload (a copy the daemon reads in place while it sends) is deleted.
/// Pure: the entry's facts, its transfers' states as the daemon reports them, and the time
/// are given. `WebUploadStaging` in ParleyWeb asks this for every entry on each sweep.
public struct WebStagedEntry: Sendable, Equatable {
    /// When the entry was created (ms since the epoch).
    public var createdAtMs: Int64
    /// The transfers `files.send` created for it (one per recipient; a room: one per
    /// member). Nil: no `files.send` answer yet (uploading, or left over).
    public var transferIDs: [String]?
    /// An upload into it is running in this process.
    public var uploading: Bool

    public init(createdAtMs: Int64, transferIDs: [String]?, uploading: Bool) {
        self.createdAtMs = createdAtMs
        self.transferIDs = transferIDs
        self.uploading = uploading
    }
}

public enum WebStagingCleanup {
    public enum Decision: Sendable, Equatable {
        case keep
        case remove(Reason)
    }

    public enum Reason: Sendable, Equatable {
        /// Every transfer ended (completed, failed, cancelled, rejected) or is unknown to the
        /// daemon (forgotten): nobody reads the copy any more.
        case transfersEnded
        /// Older than `WebLimits.maxStagedAgeSeconds`.
        case tooOld
        /// No transfer was ever made for it and it is past `WebLimits.orphanGraceSeconds`.
        case orphan
    }

    /// The events after which a sweep may find something to remove: a transfer ended.
    public static let sweepingEvents: Set<String> = [
        ControlEvent.fileCompleted, ControlEvent.fileFailed, ControlEvent.fileCancelled
    ]

    /// The transfer states in which the daemon no longer reads the file.
    public static let finalStates: Set<String> = ["completed", "rejected", "cancelled", "failed"]

    /// `states` maps each transfer id to its state, or nil when the daemon does not know
    /// the transfer; an id missing from `states` was not asked about (the daemon was not
    /// reachable): keep, since nothing says the transfer ended.
    public static func decide(_ entry: WebStagedEntry, states: [String: String?], nowMs: Int64) -> Decision {
        let age = nowMs - entry.createdAtMs
        if entry.uploading {
            // The upload's own error path removes it; only a stuck one is timed out here.
            return age > WebLimits.maxStagedAgeSeconds * 1000 ? .remove(.tooOld) : .keep
        }
        if age > WebLimits.maxStagedAgeSeconds * 1000 { return .remove(.tooOld) }
        guard let ids = entry.transferIDs else {
            return age > WebLimits.orphanGraceSeconds * 1000 ? .remove(.orphan) : .keep
        }
        if ids.isEmpty { return .remove(.transfersEnded) }
        for id in ids {
            guard let known = states[id] else { return .keep }
            if let state = known, !finalStates.contains(state) { return .keep }
        }
        return .remove(.transfersEnded)
    }
}
