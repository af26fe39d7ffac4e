/// Who may use this `parley web`: the launch tokens not yet used, and the browser sessions
/// (cookies) they were exchanged for. Pure: the time is passed in (seconds on a monotonic
/// clock), so tests drive expiry with a manual clock.
///
/// A launch token is good **once**, within `WebLimits.launchTokenLifetimeSeconds`: the URL
/// it is in may have been seen by others (a terminal scrollback, a screen share, the
/// command line of a browser started with it), and a used token is worth nothing. The
/// session secret that replaces it lives only in an HttpOnly cookie and in this process's
/// memory: a new `parley web` starts with none.
public struct WebSessions: Sendable {
    struct LaunchToken: Sendable {
        var secret: WebSecret
        var expiresAt: Double
    }

    private var launchTokens: [LaunchToken] = []
    /// Oldest first; at most `WebLimits.maxSessions`.
    private var sessions: [WebSecret] = []

    public init() {}

    /// A new one-time launch token, valid from `now` for the launch token lifetime.
    public mutating func issueLaunchToken(now: Double) -> WebSecret {
        let secret = WebSecret.random()
        launchTokens.append(LaunchToken(secret: secret, expiresAt: now + Double(WebLimits.launchTokenLifetimeSeconds)))
        return secret
    }

    /// Exchanges a launch token for a new session secret (the cookie's value), consuming the
    /// token. Nil for an unknown, used or expired token.
    public mutating func redeem(launchToken candidate: Substring, now: Double) -> WebSecret? {
        launchTokens.removeAll { $0.expiresAt <= now }
        // Every token is compared (no early exit on a match's position) so the time taken
        // does not say which one matched.
        var matched: Int?
        for (index, token) in launchTokens.enumerated() where token.secret.matches(candidate) {
            matched = index
        }
        guard let matched else { return nil }
        launchTokens.remove(at: matched)
        let session = WebSecret.random()
        sessions.append(session)
        if sessions.count > WebLimits.maxSessions { sessions.removeFirst(sessions.count - WebLimits.maxSessions) }
        return session
    }

    /// Whether `cookieValue` is a live session secret.
    public func isSession(_ cookieValue: Substring) -> Bool {
        var found = false
        for session in sessions where session.matches(cookieValue) { found = true }
        return found
    }

    /// Whether `token` can still be redeemed at `now` (not used, not expired).
    public func isUsable(_ token: WebSecret, now: Double) -> Bool {
        launchTokens.contains { $0.secret == token && $0.expiresAt > now }
    }

    /// Launch tokens still usable at `now` (for tests and for the "link expired" hint).
    public func usableLaunchTokenCount(now: Double) -> Int {
        launchTokens.filter { $0.expiresAt > now }.count
    }
}
