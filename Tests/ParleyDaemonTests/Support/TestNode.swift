import Foundation
import NIOCore
import ParleyCore
import ParleyStore
@testable import ParleyDaemon

/// Who a test party is: keys and a signed card, as a daemon would have them.
struct TestIdentity {
    static let issuedAt: UInt64 = 1_700_000_000
    let name: String
    let keys: NodeKeys
    let card: Card
    let bootID = Sodium.randomBytes(HandshakePayload.bootIDLength)

    init(name: String) throws {
        self.name = name
        keys = NodeKeys(identity: .generate(), noiseStatic: .generate())
        card = try Card.issue(identity: keys.identity, noiseKey: keys.noiseStatic.publicKey,
                              displayName: name, hostName: "\(name).local",
                              issuedAt: Self.issuedAt, sequence: 1)
    }

    var identityHex: String { card.identityKey.hex }

    /// A fresh handshake for one connection, in the role its direction gives.
    func handshake(_ role: SessionHandshake.Role) -> SessionHandshake {
        SessionHandshake(role: role, localCard: card, staticKey: keys.noiseStatic, bootID: bootID,
                         now: Self.issuedAt + 60)
    }

    /// This party as another node's store pins it after a first handshake.
    func pinnedRecord(at ms: Int64 = 1_700_000_000_000) -> PeerRecord {
        PeerRecord(identity: identityHex, displayName: name, hostName: "\(name).local", card: card.encoded(),
                   cardSequence: Int64(card.sequence), noiseKey: card.noiseKey.hex, trust: .pinned,
                   firstSeen: ms, lastSeen: ms)
    }
}

/// A scratch state directory, removed when the test releases it.
final class TemporaryDirectory {
    let path: String

    init() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("parley-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        path = base.path
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A node on a real SQLite store in a temporary directory. THE one place the unit tests
/// construct a `Node`: its initializer is being reshaped (the node's decisions are moving
/// to ParleyNodeCore), and only this function should need to follow it.
struct TestNode {
    let node: Node
    let identity: TestIdentity
    let directory: TemporaryDirectory

    var store: Store { node.store }

    static func make(name: String = "alice", loop: EventLoop, options: NodeOptions = NodeOptions()) throws -> TestNode {
        let identity = try TestIdentity(name: name)
        let directory = try TemporaryDirectory()
        let store = try Store(directory: directory.path)
        // Quiet: a test that wants the log can read the store and the answers instead.
        let log = Logger(level: .error, format: .human, sink: { _ in })
        let node = Node(loop: loop, store: store, keys: identity.keys, card: identity.card, options: options,
                        log: log, networkKey: nil)
        node.stateDirectory = directory.path
        return TestNode(node: node, identity: identity, directory: directory)
    }
}
