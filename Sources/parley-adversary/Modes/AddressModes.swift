// Modes about address gossip and the dial-back probe (docs/PROTOCOL.md, "Addresses"): a
// peer that asks to be dialled anywhere, probes for addresses it should not learn, or
// relays a record it forged.
import Foundation
import ParleyCore

/// `dial-back T PORT N`: ask N times to be dialled back at PORT; the outcomes in order.
func runDialBack(_ a: ModeArguments) {
    guard let portText = a.string(2), let backPort = UInt16(portText), let count = a.string(3).flatMap({ Int($0) }),
        (1...20).contains(count)
    else {
        fail("PORT N (1...20)")
    }
    var peer = HostilePeer.connect(a.host, a.port, timeoutMs: 15_000, name: "mallory", features: .supported)
    guard peer.send((1...count).map { .dialBackRequest(DialBackRequest(nonce: UInt64($0), port: backPort)!) }) else {
        fail("closed")
    }
    var outcomes: [UInt64: String] = [:]
    _ = peer.read { r in
        if case .dialBackResult(let result) = r { outcomes[result.nonce] = "\(result.outcome)" }
        return outcomes.count >= count
    }
    emit((1...count).map { outcomes[UInt64($0)] ?? "none" }.joined(separator: " "))
}

/// `tags-probe T VICTIM`: a chat (acknowledged), then contact tags naming VICTIM; "record"
/// if an address record about VICTIM came back before the pong.
func runTagsProbe(_ a: ModeArguments) {
    guard let hex = a.string(2), let victimBytes = Sodium.fromHex(hex),
        let victim = try? IdentityPublicKey(bytes: victimBytes)
    else { fail("VICTIM: 64 hex digits") }
    var peer = HostilePeer.connect(a.host, a.port, timeoutMs: 15_000, name: "mallory", features: .supported)
    // The chat first, and its acknowledgement awaited: it is stored before the tags come
    // (a node that counted any message as a contact would now count Mallory).
    let chatID = MessageID.random()
    let now = UInt64(Date().timeIntervalSince1970 * 1000)
    guard peer.send([.chat(ChatRecord(id: chatID, sequence: 1, createdAt: now, body: "hi, we met before"))]) else {
        fail("closed")
    }
    guard peer.read(until: { if case .ack(let ids) = $0 { ids.contains(chatID) } else { false } }) else {
        fail("closed")
    }
    let tags = ContactTags(salt: Sodium.randomBytes(ContactTags.saltLength), identities: [victim])
    guard peer.send([.contactTags(tags), .ping(11)]) else { fail("closed") }
    var told = false
    _ = peer.read { r in
        if case .addressRecord(let rec) = r, rec.identity == victim { told = true }
        return r == .pong(11)
    }
    emit(told ? "record" : "nothing")
}

/// `forge-address T VICTIM ADDR`: a signed address record naming VICTIM at ADDR but signed
/// with the adversary's own key, then a ping; "closed" if the target ended the session.
func runForgeAddress(_ a: ModeArguments) {
    guard let hex = a.string(2), let victimBytes = Sodium.fromHex(hex), victimBytes.count == 32,
        let addressText = a.string(3)
    else {
        fail("VICTIM: 64 hex digits")
    }
    let (vHost, vPort) = parseTarget(addressText)
    var peer = HostilePeer.connect(a.host, a.port, timeoutMs: 10_000, name: "mallory", features: .supported)
    let now = UInt64(Date().timeIntervalSince1970 * 1000)
    guard let endpoint = SignedAddressRecord.Endpoint(host: vHost, port: vPort) else { fail("ADDR: an IP literal") }
    // Mallory signs, then swaps in the victim's identity: the relay of a "record" that
    // would send the target's dials for the victim to Mallory's choice of host.
    var forged = try! SignedAddressRecord(signing: [endpoint], issuedAt: now, with: peer.identity).encoded()
    forged.replaceSubrange(1..<33, with: victimBytes)
    var stream: [UInt8] = [AppRecord.RecordType.addressRecord.rawValue]
    stream.appendUInt32BE(UInt32(forged.count))
    stream += forged
    stream += AppRecord.ping(9).encoded()
    guard let sealed = try? peer.established.transport.seal(stream), peer.conn.sendFrame(sealed) else {
        emit("closed")
        exit(0)
    }
    emit(peer.read(until: { $0 == .pong(9) }) ? "alive" : "closed")
}

/// `sign-address ADDR KEYFILE MS`: not an attack on a daemon (ADDR is only the address in
/// the record): the record the owner of KEYFILE (an identity.key: a header line, 64 hex
/// digits, a newline) would sign, dated MS, printed in hex.
func runSignAddress(_ a: ModeArguments) {
    guard let path = a.string(2), let issued = a.string(3).flatMap({ UInt64($0) }),
        let file = FileManager.default.contents(atPath: path).map({ [UInt8]($0) }),
        let newline = file.firstIndex(of: UInt8(ascii: "\n")), file.count > newline + 1,
        let seed = SecretBytes(hex: file[(newline + 1)..<(file.count - 1)], count: 32),
        let identity = try? IdentityKeyPair(seed: seed)
    else { fail("usage: sign-address HOST:PORT IDENTITY-KEY-FILE ISSUED_MS") }
    guard let endpoint = SignedAddressRecord.Endpoint(host: a.host, port: a.port) else {
        fail("HOST: an IP literal")
    }
    // Force-try: a valid endpoint and key.
    emit(Sodium.hex(try! SignedAddressRecord(signing: [endpoint], issuedAt: issued, with: identity).encoded()))
}
