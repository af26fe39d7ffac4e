// Modes about conversation records: a peer from before they existed, and a stranger who
// edits, deletes and reacts to messages that are not its own.
import Foundation
import ParleyCore

/// `old-peer T SECS`: a peer that predates conversation records (no features in its
/// handshake): a chat, then SECS seconds of acknowledging chats and naming other records.
func runOldPeer(_ a: ModeArguments) {
    var peer = HostilePeer.connect(a.host, a.port, timeoutMs: 1_000, name: "oldie")
    var outgoing: [AppRecord] = [
        .chat(
            ChatRecord(
                id: .random(), sequence: 1, createdAt: UInt64(Date().timeIntervalSince1970) * 1000,
                body: "hello from an old node"))
    ]
    peer.sendOrReportClosed(outgoing)
    emit("sent")
    let deadline = Date().addingTimeInterval(Double(max(1, min(a.n, 60))))
    while Date() < deadline {
        let asked = Date()
        guard let f = peer.conn.recvFrame() else {
            // A 1 s receive timeout: look at the clock again. Nil at once: the peer closed.
            if Date().timeIntervalSince(asked) < 0.5 {
                emit("closed")
                exit(0)
            }
            continue
        }
        guard let records = peer.open(f) else {
            emit("closed")
            exit(0)
        }
        outgoing = []
        for r in records {
            switch r {
            case .chat(let chat):
                emit("chat \(chat.body)" + (chat.replyTo == nil ? "" : " (reply)"))
                outgoing.append(.ack([chat.id]))
            case .ping(let v): outgoing.append(.pong(v))
            case .messageAction(let a): emit("record 0x\(String(a.recordTypeByte, radix: 16))")
            case .status: emit("record 0x0d")
            case .unknown(let type, _) where type >= 0x09: emit("record 0x\(String(type, radix: 16))")
            default: break
            }
        }
        peer.sendOrReportClosed(outgoing)
    }
    emit("done")
}

/// `forge-action T MSGID [ROOMID]`: a chat of its own, then an edit, a delete and a
/// reaction of someone else's message (and of a room message, as a non-member), then an
/// edit of its own chat; "acked N" and "alive".
func runForgeAction(_ a: ModeArguments) {
    guard let hex = a.string(2), let target = MessageID(hex: hex) else { fail("MSGID: 32 hex digits") }
    var peer = HostilePeer.connect(a.host, a.port, timeoutMs: 30_000, name: "mallory", features: .supported)
    let now = UInt64(Date().timeIntervalSince1970) * 1000
    let own = MessageID.random()
    var sequence: UInt64 = 1
    func action(_ target: MessageID, _ change: MessageActionRecord.Action, room: RoomID? = nil) -> AppRecord {
        sequence += 1
        return .messageAction(
            MessageActionRecord(
                id: .random(), sequence: sequence, createdAt: now, target: target, action: change, room: room))
    }
    let poo = try! Reaction("💩")  // one emoji: valid
    var records: [AppRecord] = [
        .chat(ChatRecord(id: own, sequence: 1, createdAt: now, body: "mallory original")),
        action(target, .edit(body: "forged by mallory")),
        action(target, .delete),
        action(target, .reaction(poo, added: true)),
        action(own, .edit(body: "mallory edited"))
    ]
    // With ROOMID: the same three changes of MSGID as a room message, from a non-member.
    if let roomHex = a.string(3), let room = RoomID(hex: roomHex) {
        records += [
            action(target, .edit(body: "forged by mallory"), room: room),
            action(target, .delete, room: room),
            action(target, .reaction(poo, added: true), room: room)
        ]
    }
    let expected = records.count
    records.append(.ping(5))
    peer.sendOrReportClosed(records)
    // The pong leaves at once, the acks after the records are stored: wait for both.
    var acked = Set<MessageID>()
    var ponged = false
    _ = peer.read { r in
        if case .ack(let ids) = r { acked.formUnion(ids) }
        if case .pong(5) = r { ponged = true }
        return ponged && acked.count >= expected
    }
    emit("acked \(acked.count)")
    emit(ponged ? "alive" : "closed")
}
