import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Who this node is: its keys, its current card (re-issued with a higher sequence when
/// what it binds changes: the name, the host, the Noise key), the boot id peers use to
/// tell a restart from a simultaneous dial and when this run started, the optional network key, where the key files
/// live, and `node.whoami`'s answer, built once per card.
///
/// Its state is its own and lives on the node's event loop (the loop is its lock); the
/// wall clock is injected (a card's issue time and sequence come from it).
final class OwnIdentity {
    private(set) var keys: NodeKeys
    private(set) var card: Card {
        didSet { whoamiCache = nil }
    }
    /// Random per start; peers use it to tell our restart from a simultaneous dial.
    let bootID: [UInt8]
    /// When this run of the node started, on the monotonic clock.
    let startedAt: MonotonicInstant
    /// The network key (XXpsk0), if this LAN uses one.
    let networkKey: SecretBytes?
    /// Where the key files live (for key rotation).
    var stateDirectory: String?
    /// Called after the card was re-issued (the daemon re-advertises).
    var onCardChanged: ((Card) -> Void)?

    private let store: any SettingsStore
    private let clock: any NodeClock
    /// `node.whoami`'s answer: it hex-encodes the card and prints the fingerprint, and is
    /// what clients call to check the daemon is there.
    private var whoamiCache: NodeWhoamiResult?

    init(keys: NodeKeys, card: Card, networkKey: SecretBytes?, store: any SettingsStore, clock: any NodeClock) {
        self.keys = keys
        self.card = card
        self.networkKey = networkKey
        self.store = store
        self.clock = clock
        self.bootID = Sodium.randomBytes(HandshakePayload.bootIDLength)
        self.startedAt = clock.monotonicNow()
    }

    /// Whole seconds since this node started, on the monotonic clock.
    var uptimeSeconds: Int { Int((clock.monotonicNow() - startedAt).components.seconds) }

    /// Signs and keeps the next card (new name or host, or the current Noise key) with a
    /// higher sequence; the caller tells the peers online now, then `onCardChanged`.
    func reissue(displayName: String, hostName: String) throws -> Card {
        let nowSeconds = UInt64(max(0, clock.wallMilliseconds() / 1000))
        let next = try Card.issue(
            identity: keys.identity, noiseKey: keys.noiseStatic.publicKey,
            displayName: displayName, hostName: hostName, issuedAt: nowSeconds,
            sequence: OwnCard.nextSequence(after: card.sequence, now: nowSeconds))
        try store.setSetting(OwnCard.settingKey, Sodium.hex(next.encoded()))
        card = next
        return next
    }

    /// A new Noise static key on disk; the caller re-issues the card that vouches for it.
    /// New handshakes use it at once.
    func rotateNoiseKey() throws {
        guard let dir = stateDirectory else { throw NodeError.noStateDirectory }
        let fresh = NoiseStaticKeyPair.generate()
        try KeyFiles.writeNoiseStatic(fresh, stateDirectory: dir)
        keys = NodeKeys(identity: keys.identity, noiseStatic: fresh)
    }

    /// This node as `node.whoami` describes it.
    func whoami() -> NodeWhoamiResult {
        if let whoamiCache { return whoamiCache }
        let c = card
        let result = NodeWhoamiResult(
            name: c.displayName, host: c.hostName, fingerprint: c.fingerprint.description,
            identityKey: c.identityKey.hex, noiseKey: c.noiseKey.hex,
            card: Sodium.hex(c.encoded()), cardSequence: Int(clamping: c.sequence))
        whoamiCache = result
        return result
    }
}
