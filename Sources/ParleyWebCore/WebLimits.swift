import ParleyControlProtocol

/// Every limit `parley web` puts on what a browser (or anything else on loopback) can push
/// against it, each with its reason. docs/WEB.md lists them.
public enum WebLimits {
    /// One WebSocket message (one JSON-RPC request). The daemon takes a line up to this size
    /// (`ControlLimits.maxLineBytes`: a 64 KiB body escaped as JSON fits several times), so
    /// anything larger would only be refused one hop later, after we had buffered it.
    public static let maxWebSocketMessageBytes = ControlLimits.maxLineBytes

    /// One line from the daemon relayed to the page. A `messages.list` page of the page's
    /// size (50) of maximal bodies is under 20 MiB; a larger line means something is wrong,
    /// and holding it would let the daemon's answer size decide our memory.
    public static let maxDaemonLineBytes = 32 << 20

    /// Requests per WebSocket: a burst covers opening the page (whoami, peers, rooms,
    /// subscribe, the first page, marking read) and fast typing; the sustained rate is far
    /// above a person's and far below what would let a hijacked page flood peers.
    public static let requestBurst = 60
    public static let requestsPerSecond = 20

    /// WebSockets open at once. A person has a few tabs; each socket holds one daemon
    /// connection, and the daemon allows 64 clients in all (`ControlLimits.maxClients`).
    public static let maxWebSockets = 8

    /// WebSockets still signing in (`WebAuthHandshake`) at once. They hold no daemon
    /// connection yet (that is opened after the sign-in), so they are counted apart from
    /// `maxWebSockets`: a process on loopback opening sockets it cannot sign in cannot take
    /// the person's tabs' places.
    public static let maxSigningInWebSockets = 16

    /// A WebSocket that has not signed in within this time is closed: the page's handshake
    /// takes two round trips on loopback.
    public static let signInTimeoutSeconds = 10

    /// One sign-in handshake message: a label and two 64-digit hex values.
    public static let maxAuthMessageBytes = 512

    /// An HTTP connection that sends or receives nothing for this long is closed, so a
    /// local process cannot hold connections open for free. (WebSockets are kept alive by
    /// pings instead.)
    public static let httpIdleTimeoutSeconds: Int64 = 30

    /// An HTTP response the client has stopped reading (a paused download, a stuck tab, a
    /// local process that opens `GET /files/ID` and never reads) is cut off after this long
    /// without progress: the connection is closed, and with it the file's descriptor and its
    /// slot of `maxConcurrentFileResponses` are given back. The idle timeout does not cover a
    /// response in flight. "Without progress": the socket's send buffer has stayed full (the
    /// channel unwritable) the whole time; a browser that is reading drains it within
    /// milliseconds, even a slow one within seconds.
    public static let responseWriteStallSeconds: Int64 = 30

    /// Request headers, all together: the page's requests carry one key and a few short
    /// headers; the library's default (80 KiB) is far more than they need.
    public static let maxRequestHeaderBytes = 16 * 1024

    // MARK: Attachments uploaded from the page (`POST /upload`, WebUpload*)

    /// One uploaded file. A browser holds nothing back (the file streams to disk), so this
    /// bounds the disk a page, or a script in it, can fill with one request; files larger
    /// than this are sent with `parley send --attach`, which reads them in place.
    public static let maxUploadBytes = 1 << 30

    /// Uploads in progress at once. A person drops a few files; each holds an open file and
    /// a connection, and the disk's bandwidth is shared, so more would only be slower.
    public static let maxConcurrentUploads = 2

    /// Bytes held in the staging directory at once (files waiting for their transfer to
    /// end, plus uploads in progress, counted at their declared size). Staged files are
    /// copies: this bounds what the page can keep on the person's disk in all.
    public static let maxStagingBytes: Int64 = 4 << 30

    /// Free space that must remain on the staging file system after an upload: a full
    /// home directory breaks everything else the person runs.
    public static let minFreeBytesAfterUpload: Int64 = 512 << 20

    /// A staged file whose transfer has not ended after this long is deleted anyway (its
    /// transfer then fails: "the source file changed"). A file to a peer who stays away
    /// waits this long; a forgotten one does not hold the disk for ever.
    public static let maxStagedAgeSeconds: Int64 = 7 * 24 * 3600

    /// A staging entry with no transfer (an upload cut off, `files.send` refused, a crash)
    /// is deleted once it is this old: long enough that an upload still running in another
    /// `parley web` of the same user is never taken for a leftover.
    public static let orphanGraceSeconds: Int64 = 3600

    /// Staged files are checked when a `file.*` event says a transfer ended; without one,
    /// this often anyway: it applies the age bound, and catches an end the watcher missed
    /// while it reconnected. Rare, so an idle `parley web` does not wake the daemon.
    public static let stagingSweepIntervalSeconds: Int64 = 600

    /// The staging watcher's wait before it connects again when the daemon went away (a
    /// restart takes about this long).
    public static let stagingReconnectSeconds = 2

    /// The uploaded file's name (after sanitizing, in UTF-8 bytes): a file system's limit is
    /// 255; some room is left for the daemon's " (1)" on a name clash at the receiver.
    public static let maxUploadNameBytes = 200

    /// The caption sent with an upload. It travels percent-encoded in the request's URL,
    /// which must fit `maxRequestHeaderBytes` with the other headers; 1 KiB is a long caption (the
    /// daemon would take 4 KiB, `parley send --attach` can send those).
    public static let maxUploadCaptionBytes = 1_024

    /// The upload's query string (`to`, `name`, `caption`, percent-encoded: up to 3 bytes
    /// per byte of text; the name as the browser gives it may be longer than what is kept).
    public static let maxUploadQueryBytes = 3 * (maxUploadCaptionBytes + 4 * 255 + 256)

    /// Received files served to the page at once (`GET /files/ID`): each holds a descriptor
    /// of the daemon's copy and a connection while the browser reads it. Only the person's
    /// signed-in page can start one; the bound keeps a runaway script from holding many.
    public static let maxConcurrentFileResponses = 4
    /// The size of each read of a received file while it is streamed to the browser.
    public static let fileResponseChunkBytes = 256 * 1024
}
