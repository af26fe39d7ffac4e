import ParleyCore
import ParleyStore

/// Keeps this node's signed card: re-used while nothing it binds has changed,
/// re-issued with a higher sequence when the name, host or Noise key changes.
enum OwnCard {
    static let settingKey = "own_card"

    static func current(keys: NodeKeys, displayName: String, hostName: String, store: Store, now: UInt64) throws -> Card {
        var previous: Card?
        if let hex = try store.setting(settingKey), let bytes = Sodium.fromHex(hex) {
            previous = try? Card.decode(bytes)
        }
        if let p = previous, p.identityKey == keys.identity.publicKey, p.noiseKey == keys.noiseStatic.publicKey,
           p.displayName == displayName, p.hostName == hostName {
            return p
        }
        let card = try Card.issue(identity: keys.identity, noiseKey: keys.noiseStatic.publicKey,
                                  displayName: displayName, hostName: hostName, issuedAt: now,
                                  sequence: (previous?.sequence ?? 0) + 1)
        try store.setSetting(settingKey, Sodium.hex(card.encoded()))
        return card
    }
}
