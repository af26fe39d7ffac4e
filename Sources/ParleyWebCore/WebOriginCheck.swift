/// The Host and Origin rules. A page from another site can make the browser send requests
/// to 127.0.0.1; two attacks follow, and these checks answer them:
/// - **DNS rebinding**: evil.example resolves first to the attacker, then to 127.0.0.1; the
///   browser then sends `Host: evil.example:PORT` with evil.example's cookies (none of
///   ours). Only `127.0.0.1:PORT` and `localhost:PORT` are taken as Host.
/// - **Cross-site WebSocket hijacking**: WebSockets are not bound by the same-origin policy;
///   the browser sends the `Origin` of the page that opened it. The upgrade needs an Origin
///   that is exactly this server's.
public enum WebOriginCheck {
    /// The Host values this server answers to on `port`.
    /// (The page is served on the first, the confirmation window on the second:
    /// `WebWindow`.)
    public static func allowedHosts(port: Int) -> [String] {
        WebWindow.allCases.map { $0.host(port: port) }
    }

    public static func isAllowedHost(_ host: Substring?, port: Int) -> Bool {
        guard let host else { return false }
        return allowedHosts(port: port).contains { $0 == host.lowercased() }
    }

    /// An Origin header is `scheme://host:port` with nothing after it.
    public static func isAllowedOrigin(_ origin: Substring?, port: Int) -> Bool {
        guard let origin else { return false }
        return allowedHosts(port: port).contains { "http://\($0)" == origin.lowercased() }
    }

    /// `Sec-Fetch-Site` (sent by current browsers): only our own pages and the person's own
    /// navigation (typing the URL, a bookmark, xdg-open) are taken. Absent: not a browser
    /// that sends it; the other checks still apply.
    public static func isAllowedFetchSite(_ site: Substring?) -> Bool {
        guard let site else { return true }
        return site == "same-origin" || site == "none"
    }
}
