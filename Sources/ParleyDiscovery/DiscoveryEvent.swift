/// What ``MDNSDiscovery`` reports, always on the queue it was given.
public enum DiscoveryEvent: Sendable, Equatable {
    /// Our advertisement is established under this name: the actual one, which differs
    /// from the requested name after a conflict. Sent again after every re-registration
    /// (avahi restarted, advertisement updated, renamed on a later conflict).
    case registered(instanceName: String)
    /// Our own advertisement came back through our own browser (`parley doctor`'s
    /// "advertisement" check: avahi publishes it on the link). Never reported as `.found`.
    case ownAdvertisementBrowsed(instanceName: String)
    /// A peer was resolved, or its addresses, TXT, port or host changed.
    case found(DiscoveredPeer)
    /// A peer that was reported by `.found` has withdrawn its advertisement (or, after an
    /// avahi outage, did not reappear within ``MDNSDiscovery/reconfirmationWindow``).
    case lost(instanceName: String)
    /// avahi-daemon cannot be reached (not running, restarted, D-Bus gone). Sent once per
    /// outage; discovery retries every `retryInterval` until it works again.
    case unavailable(reason: String)
    /// avahi-daemon is reachable again after `.unavailable`: we re-registered and
    /// re-browse, and `.found` is sent again for peers still there.
    case available
    /// A peer was resolved but its host name gave no address (for `.local` names this
    /// usually means nss-mdns is missing); the reason says what to do.
    case addressLookupFailed(hostTarget: String, reason: String)
}
