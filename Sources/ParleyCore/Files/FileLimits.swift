/// Every limit of the file records (docs/PROTOCOL.md "Files") that a peer can push
/// against, each with its reason, in the style of `WireLimits`.
public enum FileLimits {
    /// The chunk size this implementation sends: the largest allowed, so a chunk record
    /// (24 bytes of header, 5 of record header) stays under `WireLimits.maxRecordBytes`
    /// with room to spare, and per-chunk costs (a hash, a record, a pwrite) are amortised
    /// over 64 KiB.
    public static let preferredChunkSize = 65_536
    /// Smallest chunk size a receiver accepts: smaller chunks make the hash list (32 bytes
    /// per chunk) and the per-record overhead grow out of proportion.
    public static let minChunkSize = 4_096
    /// Largest chunk size: one chunk record must fit in `WireLimits.maxRecordBytes`.
    public static let maxChunkSize = 65_536
    /// Largest file: 16 GiB. With `maxChunks` it bounds the hash list a receiver verifies and
    /// keeps (8 MiB); larger files belong on a file server.
    public static let maxFileBytes: UInt64 = 1 << 34
    /// Most chunks of one file: the hash list is at most 262,144 × 32 bytes = 8 MiB.
    public static let maxChunks: UInt64 = 262_144
    /// Longest offered name in bytes of UTF-8 (most file systems allow 255).
    public static let maxNameBytes = 255
    /// Longest name the receiver writes, in bytes: 255 minus room for " (9999)" and the
    /// partial file's prefix.
    public static let maxStoredNameBytes = 200
    /// Longest media type (RFC 6838 allows 127 characters for type and subtype each; 127
    /// in all is plenty for what is shown).
    public static let maxMediaTypeBytes = 127
    /// Longest caption: a paragraph under a picture, not a letter.
    public static let maxCaptionBytes = 4_096
    /// Largest thumbnail: a small preview, stored and shown, never decoded by the daemon.
    public static let maxThumbnailBytes = 32_768
    /// Most hashes in one `fileHashes` record (64 KiB of hashes, well within a record).
    public static let maxHashesPerRecord = 2_048
    /// Chunks the sender may send beyond the receiver's last `fileHave`: 16 MiB at 64 KiB,
    /// which keeps a gigabit link busy across a checkpoint while bounding what a receiver
    /// restart loses and what is queued ahead of nothing but the socket.
    public static let window: UInt64 = 256
    /// The receiver makes its partial file durable (fdatasync), records the count and sends
    /// `fileHave` every this many chunks (4 MiB): one fsync per 4 MiB keeps the disk near
    /// its streaming rate; a quarter of the window, so the sender never stalls on it.
    public static let checkpointChunks: UInt64 = 64
    /// Chunks failing their hash in one transfer before the receiver gives up on a sender
    /// that keeps sending corrupted data.
    public static let maxCorruptChunks = 3
    /// Longest reason text in a `fileEnd` record (as a close text).
    public static let maxEndTextBytes = 200
}
