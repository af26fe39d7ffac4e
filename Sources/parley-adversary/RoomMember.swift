// A room member speaking the real protocol, for the room modes.
import Foundation
import ParleyCore

/// A room member: handshake with a fixed identity, every record it receives acknowledged
/// like a node would, the room operations kept.
struct RoomMember {
    var peer: HostilePeer
    var rooms: [RoomID: (RoomOperation, [RoomOperation])] = [:]
    var pendingOps: [RoomOperation] = []
    var acked: Set<MessageID> = []
    var remote: IdentityPublicKey { peer.target }

    /// Signed room messages received (room sync), by room.
    var signed: [SignedRoomMessage] = []

    init(host: String, port: UInt16, identity: IdentityKeyPair, name: String, features: ProtocolFeatures = []) {
        guard let c = Conn(host, port, timeoutMs: 1500) else { fail("connect") }
        // The same Noise key on every run (derived from the identity's public key), so the
        // card the target pinned the first time stays the one it sees.
        var noiseSeed = Sodium.sha256(Array("parley-adversary-noise\0".utf8), identity.publicKey.bytes)
        let st = try! NoiseStaticKeyPair(privateKey: SecretBytes(consuming: &noiseSeed))  // 32 bytes
        // And the same card: issued at the start of the day, sequence 1.
        let day = UInt64(Date().timeIntervalSince1970) / 86_400 * 86_400
        let card = try! Card.issue(
            identity: identity, noiseKey: st.publicKey, displayName: name, hostName: "adversary",
            issuedAt: day, sequence: 1)  // fixed valid inputs
        guard let est = handshake(c, identity: identity, staticKey: st, card: card, features: features) else {
            fail("handshake refused")
        }
        peer = HostilePeer(conn: c, established: est, identity: identity)
    }

    func room(_ id: RoomID) -> (RoomOperation, [RoomOperation])? { rooms[id] }

    mutating func send(_ records: AppRecord...) {
        guard peer.send(records) else { fail("send") }
    }

    mutating func chat(_ room: RoomID, _ body: String) {
        send(
            .roomChat(
                RoomChatRecord(
                    id: MessageID.random(), roomID: room, sequence: 1_000_000,
                    createdAt: UInt64(Date().timeIntervalSince1970 * 1000), body: body)))
    }

    /// Reads until the target has been silent for the receive timeout, acknowledging
    /// operations and messages as a node would, and keeping the operations by room.
    mutating func takeTraffic() {
        // Until the target has sent nothing but pings for 1.5 s (a daemon with a short ping
        // interval never falls silent), and 15 s at most.
        let start = Date()
        var lastUseful = Date()
        while Date().timeIntervalSince(lastUseful) < 1.5, Date().timeIntervalSince(start) < 15 {
            guard let f = peer.conn.recvFrame() else { break }
            guard let records = peer.open(f) else { fail("transport") }
            var acks: [MessageID] = []
            for r in records {
                switch r {
                case .roomOperation(let op):
                    acks.append(op.hash.ackID)
                    pendingOps.append(op)
                case .roomChat(let c):
                    acks.append(c.id)
                case .roomMessage(.verified(let m)):
                    acks.append(m.id)
                    signed.append(m)
                case .chat(let c):
                    acks.append(c.id)
                case .ping(let v):
                    send(.pong(v))
                case .ack(let ids):
                    acked.formUnion(ids)
                default:
                    break
                }
            }
            if !acks.isEmpty {
                send(.ack(acks))
                lastUseful = Date()
            }
        }
        for op in pendingOps where op.kind == .create { rooms[op.roomID] = (op, []) }
        for op in pendingOps where op.kind != .create && rooms[op.roomID]?.1.contains(op) == false {
            rooms[op.roomID]?.1.append(op)
        }
        pendingOps.removeAll()
    }

    /// How many of `ids` the target acknowledged (an ack is sent for refused operations too).
    mutating func awaitAcks(_ ids: [MessageID], seconds: Double = 10) -> Int {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, !Set(ids).isSubset(of: acked) {
            // A receive timeout or a frame that does not open: look at the clock again.
            guard let records = peer.receive() else { continue }
            for r in records {
                if case .ack(let got) = r { acked.formUnion(got) }
                if case .ping(let v) = r { send(.pong(v)) }
            }
        }
        return Set(ids).intersection(acked).count
    }
}
