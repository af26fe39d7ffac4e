import NIOCore
import ParleyCore
import ParleyStore

@testable import ParleyDaemon

/// Who a test party is: keys and a signed card, as a daemon would have them, without a
/// node (for a bare `PeerConnection`, or a peer pinned in a node's store). Tests that need
/// a whole node build it with `InProcessNode`, the one place a `Node` is constructed.
struct TestIdentity {
    static let issuedAt: UInt64 = 1_700_000_000
    let name: String
    let keys: NodeKeys
    let card: Card
    let bootID = Sodium.randomBytes(HandshakePayload.bootIDLength)

    init(name: String) throws {
        self.name = name
        keys = NodeKeys(identity: .generate(), noiseStatic: .generate())
        card = try Card.issue(
            identity: keys.identity, noiseKey: keys.noiseStatic.publicKey,
            displayName: name, hostName: "\(name).local",
            issuedAt: Self.issuedAt, sequence: 1)
    }

    var identity: IdentityPublicKey { card.identityKey }
    var identityHex: String { card.identityKey.hex }

    /// A fresh handshake for one connection, in the role its direction gives.
    func handshake(_ role: SessionHandshake.Role) -> SessionHandshake {
        SessionHandshake(
            role: role, localCard: card, staticKey: keys.noiseStatic, bootID: bootID,
            now: Self.issuedAt + 60)
    }

    /// This party as another node's store pins it after a first handshake.
    func pinnedRecord(at ms: Int64 = 1_700_000_000_000) -> PeerRecord {
        PeerRecord(
            identity: card.identityKey, displayName: name, hostName: "\(name).local", card: card.encoded(),
            cardSequence: Int64(card.sequence), noiseKey: card.noiseKey, trust: .pinned,
            firstSeen: ms, lastSeen: ms)
    }
}
