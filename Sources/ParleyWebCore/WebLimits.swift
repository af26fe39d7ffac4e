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

    /// A launch token (in the printed URL or the redirect file) must be used within this
    /// time, once: it bounds how long a token that leaked (shell history, a screen share) is
    /// worth anything.
    public static let launchTokenLifetimeSeconds = 600

    /// Browser sessions (cookies) kept at once; the oldest is dropped beyond that. Only a
    /// launch token creates one, so this only bounds memory.
    public static let maxSessions = 16

    /// An HTTP connection that sends or receives nothing for this long is closed, so a
    /// local process cannot hold connections open for free. (WebSockets are kept alive by
    /// pings instead.)
    public static let httpIdleTimeoutSeconds: Int64 = 30

    /// Request headers, all together: the page's requests carry one cookie and a few short
    /// headers; the library's default (80 KiB) is far more than they need.
    public static let maxRequestHeaderBytes = 16 * 1024
}
