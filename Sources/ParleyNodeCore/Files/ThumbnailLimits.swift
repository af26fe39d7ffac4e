import ParleyCore

/// Every bound on making a thumbnail of a picture the user sends (issue 18), each with its
/// reason. The picture is decoded by `vipsthumbnail` in a child process, never by parleyd:
/// image decoders are a classic home of memory-safety bugs, and a crafted picture (sent to
/// the user by someone else, then forwarded) must at worst kill that child.
public enum ThumbnailLimits {
    /// Pictures larger than this get no thumbnail: decoding them would take longer than
    /// the offer may wait, and no camera picture is near it.
    public static let maxSourceBytes: UInt64 = 64 << 20
    /// The largest picture (width × height, as its header declares) that is decoded: a
    /// 108-megapixel phone camera fits; a "decompression bomb" (a small PNG declaring
    /// 30000 × 30000 pixels, 900 megapixels) is refused before any pixel is decoded.
    public static let maxSourcePixels = 120_000_000
    /// Largest width or height the thumbnail has, in pixels (a chat line's preview).
    public static let maxDimension = 160
    /// JPEG quality of the first try, then of the one retry when the first is over
    /// `FileLimits.maxThumbnailBytes` (the offer record's bound); after that, none.
    public static let qualities = [70, 40]
    /// How long an offer waits for its thumbnail, from the moment it was asked for
    /// (including time queued behind other pictures): the child is killed at this point
    /// and the offer goes out without one. Sending must never wait on a decoder for longer.
    public static let timeout: Duration = .seconds(5)
    /// CPU seconds a child may use (RLIMIT_CPU): below the wall-clock timeout, so a child
    /// spinning on a crafted picture is stopped by the kernel even if our timer is late.
    public static let cpuSeconds = 4
    /// Address space of a child (RLIMIT_AS): libvips with one thread needs well under
    /// 200 MiB for a 100-megapixel JPEG with shrink-on-load; 512 MiB leaves room for the
    /// loader libraries while a bomb that tries to allocate gigabytes fails at once.
    public static let addressSpaceBytes = 512 << 20
    /// Largest file a child may write (RLIMIT_FSIZE): it writes its JPEG to stdout (a pipe,
    /// not limited by this), so nothing on disk; the bound is for libvips' temporary files
    /// should it try to spill a large image to disk.
    public static let fileSizeBytes = 1 << 20
    /// Open files of a child (RLIMIT_NOFILE): the loader libraries, the input, stdout and
    /// stderr; a handful more than it needs.
    public static let openFiles = 64
    /// Thumbnails being made at once: 100 pictures sent at once must not fork 100 decoders
    /// on a small machine; the rest wait (within their own `timeout`).
    public static let concurrent = 2
    /// Bytes of a child's stdout read: the thumbnail is at most `FileLimits.maxThumbnailBytes`;
    /// one more byte tells "too large" from "exactly the limit".
    public static let maxOutputBytes = FileLimits.maxThumbnailBytes + 1
    /// Bytes of a child's stderr kept for the debug log line (the rest is drained, unread).
    public static let maxErrorBytes = 512
    /// Bytes of `vipsheader`'s output read (one line: name, size, format, loader).
    public static let maxHeaderBytes = 4_096
}
