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
    var member = RoomMember(host: a.host, port: a.port, identity: id, name: a.all[3])
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
