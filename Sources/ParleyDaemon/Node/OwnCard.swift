import ParleyCore
import ParleyStore

/// Keeps this node's signed card: re-used while nothing it binds has changed,
/// re-issued with a higher sequence when the name, host or Noise key changes.
///
/// The sequence is derived from the issue time (docs/PROTOCOL.md, "Cards"): the next
/// sequence is the larger of the last one plus one and the current Unix time in seconds.
/// So a node that lost its store (moved aside after a corruption error, restored from an
/// old backup) but kept its identity key issues a card with a higher sequence than any it
/// issued before, and its peers take it as a re-issue instead of refusing a stale card.
enum OwnCard {
    static let settingKey = "own_card"

    /// The sequence of the card issued after `previous` at `now` (Unix seconds).
    static func nextSequence(after previous: UInt64?, now: UInt64) -> UInt64 {
        max(previous.map { $0 == .max ? .max : $0 + 1 } ?? 1, now)
    }

    static func current(keys: NodeKeys, displayName: String, hostName: String, store: Store, now: UInt64) throws -> Card
    {
        var previous: Card?
        if let hex = try store.setting(settingKey), let bytes = Sodium.fromHex(hex) {
            previous = try? Card.decode(bytes)
        }
        if let p = previous, p.identityKey == keys.identity.publicKey, p.noiseKey == keys.noiseStatic.publicKey,
            p.displayName == displayName, p.hostName == hostName
        {
            return p
        }
        let card = try Card.issue(
            identity: keys.identity, noiseKey: keys.noiseStatic.publicKey,
            displayName: displayName, hostName: hostName, issuedAt: now,
            sequence: nextSequence(after: previous?.sequence, now: now))
        try store.setSetting(settingKey, Sodium.hex(card.encoded()))
        return card
    }
}
