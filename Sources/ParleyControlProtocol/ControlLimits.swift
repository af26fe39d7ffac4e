/// Every bound the control protocol enforces, in one place so the daemon, the CLI, the
/// tests and docs/CONTROL.md agree. Each constant says why it has the value it has.
public enum ControlLimits {
    /// How long `doctor.report` waits for a peer's dial-back answer: the peer's connect
    /// timeout (3 s) plus a round trip, so a blocked port reads as `failed`, not `timeout`.
    public static let doctorDialBackTimeoutMs = 5_000

    /// Longest accepted line, in bytes, without its `\n`. The largest legitimate line is a
    /// `messages.send` carrying a maximal message body (64 KiB): escaped as JSON that is at
    /// most 6 bytes per input byte (`\u00XX`), ~384 KiB, so 1 MiB leaves ample margin while
    /// keeping a hostile local client from making the daemon buffer without bound.
    public static let maxLineBytes = 1_048_576

    /// Concurrent control connections the daemon serves. A local CLI opens one connection
    /// per command and a few `follow`s stay connected; 64 is far above real use and keeps
    /// a runaway script from exhausting file descriptors.
    public static let maxClients = 64

    /// Seconds a client may hold a partial (unterminated) line before the daemon answers
    /// `timeout` and closes. Interactive tools write whole lines at once; 30 s tolerates a
    /// human typing into `socat` while freeing slots held by stuck or malicious clients.
    public static let idleLineTimeoutSeconds = 30

    /// Notifications queued for one subscriber before it is cut off (`subscription.closed`
    /// with `subscriberTooSlow`). A reader that falls this far behind is not reading; the
    /// daemon must not buffer for it forever. 10 000 covers any realistic burst.
    public static let maxSubscriptionBacklogNotifications = 10_000

    /// Bytes of queued notifications for one subscriber before it is cut off, for the same
    /// reason: ~256 maximal messages, so memory stays bounded even with large bodies.
    public static let maxSubscriptionBacklogBytes = 16 * 1_048_576

    /// Deepest JSON nesting (objects plus arrays) accepted in a line. Real requests nest at
    /// most 3 levels; the bound keeps a line like `[[[[...` from driving a recursive decoder
    /// deep into the stack.
    public static let maxNestingDepth = 32

    /// `messages.list` page size when `limit` is absent: one screenful or so.
    public static let defaultListLimit = 50
    /// Largest `messages.list` page: bounds the response (1000 maximal bodies would still be
    /// big, but typical pages stay small) and the time the daemon spends on one query.
    public static let maxListLimit = 1000

    /// `messages.search` hits when `limit` is absent: a screenful.
    public static let defaultSearchLimit = 20
    /// Most hits one search returns: ranking costs the same whatever the limit, but each
    /// hit carries its whole body.
    public static let maxSearchLimit = 200
    /// Longest search query: a sentence or two; longer is not a search.
    public static let maxSearchQueryBytes = 1_024

    /// `messages.send` with `wait: true` and no `timeoutMs`: long enough for a peer that is
    /// online to acknowledge, short enough that a script does not hang on an offline peer.
    public static let defaultSendWaitMilliseconds = 30_000
    /// Largest accepted `timeoutMs`: a control connection held 5 minutes for one answer is
    /// already more than any interactive use needs.
    public static let maxSendWaitMilliseconds = 300_000

    /// `peers.connect` with `wait: true` and no `timeoutMs`: a LAN peer answers a dial and
    /// a handshake in milliseconds; 10 s covers a slow machine and an ARP timeout or two.
    public static let defaultConnectWaitMilliseconds = 10_000

    /// Longest `host:port` accepted by `peers.connect`: a DNS name is at most 253 bytes,
    /// plus brackets, colon and port.
    public static let maxAddressBytes = 262

    /// Longest peer selector (`to`, `peer`): display names and fingerprints are far shorter;
    /// anything longer is a mistake and is rejected before the daemon searches for it.
    public static let maxPeerSelectorBytes = 256

    /// Longest file path in `files.send`: Linux's PATH_MAX.
    public static let maxPathBytes = 4_096
}
