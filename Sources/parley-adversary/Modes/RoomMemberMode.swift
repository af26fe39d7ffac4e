// `room-member`: a room member with a fixed identity who takes the room operations the
// target sends, then acts (joins, or attacks the room from inside).
import Foundation
import ParleyCore

/// `room-member T SEED NAME ACTION [ROOM] [N]` (see the usage).
func runRoomMember(_ a: ModeArguments) {
    guard a.all.count >= 5, let seedBytes = Sodium.fromHex(a.all[2]), seedBytes.count == 32 else {
        fail("room-member T SEED(64 hex) NAME ACTION [ROOM] [N]")
    }
    var seedCopy = seedBytes
    let id = try! IdentityKeyPair(seed: SecretBytes(consuming: &seedCopy))  // 32 bytes: checked above
    let action = a.all[4]
    let roomArg = a.all.count > 5 ? RoomID(hex: a.all[5]) : nil
    // The room-sync actions announce feature bit 3, so the target reads their records.
    // The room-card actions announce bit 4 too, so the target reads their cards.
    let features: ProtocolFeatures =
        action.hasPrefix("card-") ? [.roomSync, .roomCards] : action.hasPrefix("sync-") ? [.roomSync] : []
    var member = RoomMember(host: a.host, port: a.port, identity: id, name: a.all[3], features: features)
    // PARLEY_ADVERSARY_STATE: a file of the room operations seen so far (hex, one a line),
    // so a later run (after its removal, say) can sign "from the past".
    let statePath = ProcessInfo.processInfo.environment["PARLEY_ADVERSARY_STATE"]
    if let statePath, let text = try? String(contentsOfFile: statePath, encoding: .utf8) {
        for line in text.split(separator: "\n") {
            if let bytes = Sodium.fromHex(String(line)), let op = try? RoomOperation.decode(bytes) {
                member.pendingOps.append(op)
            }
        }
    }
    member.takeTraffic()
    let now = UInt64(Date().timeIntervalSince1970 * 1000)
    func room() -> (root: RoomOperation, ops: [RoomOperation], state: RoomState) {
        guard let roomArg, let (root, ops) = member.room(roomArg),
            let state = RoomResolver.resolve(root: root, operations: ops)
        else { fail("room \(a.all.count > 5 ? a.all[5] : "?") not received") }
        return (root, ops, state)
    }
    var sent: [RoomOperation] = []
    switch action {
    case "hello":
        emit("hello")
    case "join":
        emit("rooms \(member.rooms.count)")
        for (rid, (root, ops)) in member.rooms {
            guard let state = RoomResolver.resolve(root: root, operations: ops), state.isInvited(id.publicKey) else {
                continue
            }
            let join = try! RoomOperation.change(.join, roomID: rid, after: state.heads, by: id, createdAt: now)
            sent.append(join)
            emit("joined \(rid.hex)")
        }
    case "takeover":
        let (root, ops, state) = room()
        guard !state.isMember(id.publicKey) else { fail("still a member: remove it first") }
        // Everything is signed on top of its own join, i.e. "before" its removal.
        guard let myJoin = ops.first(where: { $0.actor == id.publicKey && $0.kind == .join }) else {
            fail("never joined")
        }
        let puppet = IdentityKeyPair.generate()
        let rid = root.roomID
        let kick = try! RoomOperation.change(.remove(root.actor), roomID: rid, after: [myJoin], by: id, createdAt: now)
        let promote = try! RoomOperation.change(
            .setRole(id.publicKey, .owner), roomID: rid, after: [myJoin], by: id, createdAt: now)
        let add = try! RoomOperation.change(
            .add(puppet.publicKey), roomID: rid, after: [myJoin], by: id, createdAt: now)
        let puppetJoin = try! RoomOperation.change(.join, roomID: rid, after: [add], by: puppet, createdAt: now)
        sent = [kick, promote, add, puppetJoin]
        emit("puppet \(Fingerprint(puppet.publicKey).description)")
        member.chat(rid, "mallory is still here")
    case "backdate":
        let (root, _, state) = room()
        for m in state.members where m != id.publicKey {
            sent.append(
                try! RoomOperation.change(.remove(m), roomID: root.roomID, after: [root], by: id, createdAt: now))
        }
    case "remove-behind":
        // Issue 29 (H2): removes the member whose fingerprint is the next argument, signed
        // right after the operation that added it (before it joined), when this member
        // may have been an admin; run after a demotion or removal, it is void.
        guard a.all.count > 6 else { fail("remove-behind ROOM FINGERPRINT") }
        let (root, ops, _) = room()
        let wanted = a.all[6].replacingOccurrences(of: " ", with: "").lowercased()
        func matches(_ k: IdentityPublicKey) -> Bool {
            Fingerprint(k).description.replacingOccurrences(of: " ", with: "").lowercased() == wanted
        }
        let adds = ops.filter { if case .add(let k) = $0.change { return matches(k) } else { return false } }
        var listed: [IdentityPublicKey] = []
        if case .create(_, let members, _) = root.change { listed = members.filter(matches) }
        guard let parent = adds.sorted(by: RoomResolver.precedes).first ?? (listed.isEmpty ? nil : root),
            let target = parent.hash == root.hash ? listed.first : parent.target
        else { fail("no member with fingerprint \(a.all[6]) in the room") }
        sent = [
            try! RoomOperation.change(.remove(target), roomID: root.roomID, after: [parent], by: id, createdAt: now)
        ]
    case "squat":
        guard let roomArg else { fail("squat needs ROOM") }
        let fake = try! RoomOperation.create(
            name: "squat", members: [member.remote], by: id, createdAt: now, nonce: roomArg)
        // And an operation that claims the real room id on top of the fake create.
        let claim = try! RoomOperation.change(
            .add(IdentityKeyPair.generate().publicKey), roomID: roomArg, after: [fake],
            by: id, createdAt: now)
        sent = [fake, claim]
        emit("fake \(fake.roomID.hex)")
    case "junk":
        guard let roomArg else { fail("junk needs ROOM") }
        let n = a.all.count > 6 ? Int(a.all[6]) ?? 255 : 255
        let (root, _, _) = room()
        for _ in 0..<n {
            // A random parent the target never has: it waits, and must not block the room.
            let fakeParent = try! RoomOperation.change(
                .add(IdentityKeyPair.generate().publicKey), roomID: roomArg,
                after: [root], by: IdentityKeyPair.generate(), createdAt: now)
            sent.append(
                try! RoomOperation.change(
                    .add(IdentityKeyPair.generate().publicKey), roomID: roomArg,
                    after: [fakeParent], by: id, createdAt: now))
        }
    case "reverse":
        // A valid chain of N adds (keys that never answer), sent children first: each
        // waits for its parent until the first arrives last.
        let n = a.all.count > 6 ? Int(a.all[6]) ?? 20 : 20
        let (root, _, state) = room()
        var head = state.heads
        var chain: [RoomOperation] = []
        for _ in 0..<n {
            let op = try! RoomOperation.change(
                .add(IdentityKeyPair.generate().publicKey), roomID: root.roomID,
                after: head, by: id, createdAt: now)
            chain.append(op)
            head = [op]
        }
        sent = chain.reversed()
    case "early-chat":
        guard a.all.count > 6 else { fail("early-chat ROOM ALICE") }
        let (root, ops, state) = room()
        guard state.isInvited(id.publicKey) else { fail("not invited to the room") }
        let chatID = MessageID.random()
        member.send(
            .roomChat(
                RoomChatRecord(
                    id: chatID, roomID: root.roomID, sequence: 1_000_001,
                    createdAt: now, body: "early")))
        emit(member.awaitAcks([chatID], seconds: 2) == 0 ? "held" : "acknowledged at once")
        let join = try! RoomOperation.change(.join, roomID: root.roomID, after: state.heads, by: id, createdAt: now)
        let (aliceHost, alicePort) = parseTarget(a.all[6])
        var other = RoomMember(host: aliceHost, port: alicePort, identity: id, name: a.all[3])
        other.takeTraffic()
        other.send(.roomOperation(join))
        _ = other.awaitAcks([join.hash.ackID])
        emit(member.awaitAcks([chatID], seconds: 20) == 1 ? "acked-after-join" : "never-acked")
        _ = ops
    case "sync-say", "sync-forge", "sync-flood", "sync-equivocate":
        // Room sync (issue 30). sync-say BODY: a message of its own, validly signed, on the
        // heads it knows. sync-forge: one message under the creator's name it did not sign,
        // one of its own altered after signing, then a valid one. sync-flood N: N forged
        // messages, then a ping. Prints what the target acknowledged, and "closed"/"alive".
        let (root, _, state) = room()
        let anchor = state.heads.map(\.hash)
        func own(_ body: String, _ seq: UInt64) -> SignedRoomMessage {
            try! SignedRoomMessage.sign(
                roomID: root.roomID, roomSequence: seq, id: .random(), createdAt: now, anchor: anchor, body: body,
                by: id)  // valid inputs: heads of a resolved room, a short body
        }
        func forged(_ body: String, _ seq: UInt64) -> (MessageID, [UInt8]) {
            // Signed by this member, with the creator's key put in the author field.
            let m = own(body, seq)
            var bytes = m.encoded()
            bytes.replaceSubrange(18..<50, with: root.actor.bytes)
            return (m.id, bytes)
        }
        func sendRaw(_ payload: [UInt8]) {
            var stream: [UInt8] = [AppRecord.RecordType.roomMessage.rawValue]
            stream.appendUInt32BE(UInt32(payload.count))
            stream += payload
            guard let sealed = try? member.peer.established.transport.seal(stream), member.peer.conn.sendFrame(sealed)
            else {
                emit("closed")
                exit(0)
            }
        }
        let base = UInt64(a.int(7, default: 1))
        switch action {
        case "sync-say":
            let m = own(a.string(6) ?? "hello from mallory", base)
            member.send(.roomMessage(.verified(m)))
            emit("message-acked \(member.awaitAcks([m.id], seconds: 5))")
        case "sync-equivocate":
            // Two different messages, both validly signed, with one sequence number.
            let first = own("the first version", base)
            let second = own("a second version, same number", base)
            member.send(.roomMessage(.verified(first)), .roomMessage(.verified(second)))
            emit("message-acked \(member.awaitAcks([first.id, second.id], seconds: 5))")
        case "sync-forge":
            let (f1, b1) = forged("forged in the creator's name", base)
            var b2 = own("altered after signing", base + 1).encoded()
            let f2 = MessageID(exactly: Array(b2[50 + 8..<50 + 8 + 16]))
            b2[b2.count - 70] ^= 0x01  // a body byte
            sendRaw(b1)
            sendRaw(b2)
            let ok = own("mallory's real message", base + 2)
            member.send(.roomMessage(.verified(ok)))
            emit("valid-acked \(member.awaitAcks([ok.id], seconds: 10))")
            emit("forged-acked \(member.awaitAcks([f1, f2], seconds: 1))")
        default:
            for i in 0..<UInt64(max(1, a.int(6, default: 20))) { sendRaw(forged("flood \(i)", base + i).1) }
            member.send(.ping(1))
            let deadline = Date().addingTimeInterval(5)
            var closed = false
            while Date() < deadline, !closed {
                let (records, ended) = member.peer.available(waitMs: 200)
                closed = ended
                for r in records { if case .close = r { closed = true } }
            }
            emit(closed ? "closed" : "alive")
        }
    case "card-attacks":
        // Room cards (issue 30). Passes on: a forged card for VICTIM's key (its own card with
        // VICTIM's key put in, so the signature fails), a stranger's validly signed card, and
        // a puppet key of its own that it adds and joins as, with a card named NAME; then a
        // ping. Prints "puppet HEX", "ops-acked K", and "alive"/"closed".
        let (root, _, state) = room()
        guard a.all.count > 7, let victimBytes = Sodium.fromHex(a.all[6]),
            let victim = try? IdentityPublicKey(bytes: victimBytes)
        else {
            fail("card-attacks ROOM VICTIM(64 hex) NAME")
        }
        let rid = root.roomID
        let day = UInt64(Date().timeIntervalSince1970) / 86_400 * 86_400
        func card(_ k: IdentityKeyPair, _ name: String) -> [UInt8] {
            try! Card.issue(
                identity: k, noiseKey: NoiseStaticKeyPair.generate().publicKey, displayName: name,
                hostName: "adversary", issuedAt: day, sequence: 1
            ).encoded()  // fixed valid inputs
        }
        var forged = card(id, "victim-renamed")
        forged.replaceSubrange(1..<33, with: victim.bytes)  // version, then the identity key
        let puppet = IdentityKeyPair.generate()
        let add = try! RoomOperation.change(
            .add(puppet.publicKey), roomID: rid, after: state.heads, by: id, createdAt: now)  // valid heads
        let join = try! RoomOperation.change(.join, roomID: rid, after: [add], by: puppet, createdAt: now)
        member.send(
            .roomCard(RoomCardRecord(roomID: rid, card: forged)),
            .roomCard(RoomCardRecord(roomID: rid, card: card(.generate(), "stranger-card"))),
            .roomOperation(add), .roomOperation(join),
            .roomCard(RoomCardRecord(roomID: rid, card: card(puppet, a.all[7]))))
        emit("puppet \(puppet.publicKey.hex)")
        emit("ops-acked \(member.awaitAcks([add.hash.ackID, join.hash.ackID], seconds: 10))")
        member.send(.ping(7))
        let deadline = Date().addingTimeInterval(3)
        var closed = false
        var pong = false
        while Date() < deadline, !closed, !pong {
            let (records, ended) = member.peer.available(waitMs: 200)
            closed = ended
            for r in records {
                if case .close = r { closed = true }
                if case .pong(7) = r { pong = true }
            }
        }
        emit(closed || !pong ? "closed" : "alive")
    case "sync-have":
        // Sends an empty summary of ROOM and counts the signed messages the target pushes.
        guard let roomArg else { fail("sync-have needs ROOM") }
        member.send(.roomHave(RoomHave(roomID: roomArg, holding: [:])))
        member.signed.removeAll()
        member.takeTraffic()
        let pushed = member.signed.filter { $0.roomID == roomArg }
        emit("pushed \(pushed.count)")
        // Kept (PARLEY_ADVERSARY_STATE + ".signed") for a later `sync-relay`.
        if let statePath {
            try? pushed.map { Sodium.hex($0.encoded()) }.joined(separator: "\n").write(
                toFile: statePath + ".signed", atomically: true, encoding: .utf8)
        }
    case "sync-relay":
        // Passes on the (other authors') signed messages a `sync-have` kept, unchanged:
        // valid signatures, entitled members, but handed over by this member (removed, say).
        guard let roomArg, let statePath,
            let text = try? String(contentsOfFile: statePath + ".signed", encoding: .utf8)
        else { fail("sync-relay needs ROOM and the messages a sync-have kept") }
        let kept = text.split(separator: "\n").compactMap { Sodium.fromHex(String($0)) }
            .compactMap { try? SignedRoomMessage.decode($0) }.filter { $0.roomID == roomArg }
        // First the room's operations it holds (its own removal among them, if it got it),
        // parents first: the target then knows what this member knows.
        if let (root, ops) = member.room(roomArg) {
            for op in [root] + ops.sorted(by: RoomResolver.precedes) { member.send(.roomOperation(op)) }
        }
        for m in kept { member.send(.roomMessage(.verified(m))) }
        emit("relayed \(kept.count)")
        emit("relayed-acked \(member.awaitAcks(kept.map(\.id), seconds: 5))")
    default:
        fail("unknown room-member action \(action)")
    }
    for op in sent { member.send(.roomOperation(op)) }
    emit("sent \(sent.count)")
    if let statePath {
        let all = member.rooms.values.flatMap { [$0.0] + $0.1 } + sent
        try? all.map { Sodium.hex($0.encoded()) }.joined(separator: "\n").write(
            toFile: statePath, atomically: true, encoding: .utf8)
    }
    emit("acked \(member.awaitAcks(sent.map(\.hash.ackID)))")
}
