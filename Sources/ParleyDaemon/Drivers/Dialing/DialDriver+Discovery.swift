import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore

/// Dial targets found by mDNS: `AdvertisementTriage` decides what an advertisement is to
/// this node, the planner what to dial (`DialPlanner.addDiscovered`); this performs both
/// and logs what looks like an attack.
extension DialDriver {
    /// One advertisement as the browser resolved it.
    struct Advertisement {
        var instance: String
        var addresses: [String]
        var port: UInt16
        /// The TXT record's compact fingerprint (`fp`), if any.
        var fingerprintHint: String?
        /// A private presence token and its nonce, if any.
        var presence: (nonce: [UInt8], token: [UInt8])?
        var version: String?
    }

    /// What the node knows that the triage needs.
    struct Viewpoint {
        /// Our own mDNS instance name (Avahi may rename it on a conflict).
        var ownInstance: String?
        /// Our own compact fingerprint.
        var ownFingerprint: String
        /// Who a presence token names (one HMAC per contact; asked only when needed).
        var recognise: ((nonce: [UInt8], token: [UInt8])) -> AdvertisementTriage.PresenceMatch
        /// Whether a pinned, not blocked peer has this compact fingerprint.
        var isKnown: (String) -> Bool
    }

    /// An advertisement was seen. Returns the triage's verdict (the caller marks our own
    /// advertisement as seen).
    @discardableResult
    func advertised(_ ad: Advertisement, from view: Viewpoint) -> AdvertisementTriage.Verdict {
        let candidates = ad.addresses.compactMap { try? HostPort(host: $0, port: ad.port) }.map(DialAddress.init)
        let verdict = AdvertisementTriage.judge(
            instance: ad.instance, ownInstance: view.ownInstance, fingerprintHint: ad.fingerprintHint,
            ownFingerprint: view.ownFingerprint, carriesPresence: ad.presence != nil,
            presence: { ad.presence.map(view.recognise) ?? .nobody }, version: ad.version,
            addressCount: candidates.count)
        switch verdict {
        case .ownAdvertisement, .ignore(.ownFingerprint), .ignore(.noAddress):
            break
        case .ignore(.otherVersion(let v)):
            log.debug("ignoring an advertisement for another protocol version", ["instance": ad.instance, "v": v])
        case .dial(let hint):
            // Known peers first: the table of advertised targets is bounded, and dials of
            // addresses advertised by strangers are rate-limited per host (DialPlanner).
            let known = hint.map(view.isKnown) ?? false
            let before = planner.discoveredCount
            let key = DialTargetKey(mdnsInstance: ad.instance)
            perform(
                planner.addDiscovered(
                    key, candidates: candidates, fingerprintHint: hint, known: known,
                    presenceToken: ad.presence?.token, sessions: sessions(), now: clock.monotonicNow()))
            if planner.targets[key]?.suspicious == true {
                attackLog.log(
                    key: "presence-replay",
                    "a presence token was advertised again at another address (a replayed advertisement?); "
                        + "it is dialled only at the per-host rate, and not while its peer is connected",
                    ["instance": ad.instance, "addresses": candidates.map(\.description).joined(separator: ",")])
            }
            if planner.targets[key] == nil, before >= planner.maxDiscovered {
                attackLog.log(
                    key: "adverts-full", "too many advertised peers; ignoring new unknown ones",
                    ["limit": "\(planner.maxDiscovered)"])
            }
        }
        return verdict
    }

    /// The advertisement of `instance` went away.
    func advertisementLost(instance: String) {
        perform(planner.remove(DialTargetKey(mdnsInstance: instance)))
    }
}
