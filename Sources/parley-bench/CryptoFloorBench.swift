import CSodium
import ParleyCore

/// Row 1: the cost of each primitive through Parley's own wrappers beside the same call
/// made straight into libsodium, and from those the least CPU one XX handshake can take.
struct CryptoFloorBench {
    let scale: BenchScale

    /// Per side of Parley's XX handshake: one ephemeral key generated (scalarmult_base),
    /// three X25519 (initiator: ee = DH(e, re), es = DH(e, rs), se = DH(s, re); responder
    /// the mirror), one Ed25519 verification of the peer's card. Signing the own card is
    /// done once at daemon start, not per handshake, so it is not in the floor. Hashing
    /// and the handshake's AEAD over a few hundred bytes cost well under 1 µs and are left out.
    static let dhPerSide = 3.0

    struct Floor {
        var parleyMicros: Double
        var libsodiumMicros: Double
    }

    func run() throws -> (rows: [BenchRow], floor: Floor, aead64KiBMBps: Double) {
        Sodium.ensureInitialized()
        let n = scale.cryptoOps
        let peer = NoiseStaticKeyPair.generate()
        let mine = NoiseStaticKeyPair.generate()
        let me = try BenchIdentity(name: "floor")
        let cardBytes = me.card.encoded()
        let signedPart = Array("parley-card-v1\0".utf8) + Array(cardBytes.dropLast(64))

        // X25519 key generation.
        let keygenParley = Self.microsPerOp(n) { _ = NoiseEphemeralKeyPair.generate() }
        var sk = [UInt8](repeating: 0, count: 32)
        var pk = [UInt8](repeating: 0, count: 32)
        let keygenRaw = Self.microsPerOp(n) {
            randombytes_buf(&sk, 32)
            _ = crypto_scalarmult_base(&pk, sk)
        }
        // X25519 Diffie-Hellman.
        let dhParley = Self.microsPerOp(n) { _ = try? mine.dh(peer.publicKey) }
        var shared = [UInt8](repeating: 0, count: 32)
        let peerPK = peer.publicKey.bytes
        let dhRaw = Self.microsPerOp(n) { _ = crypto_scalarmult(&shared, sk, peerPK) }
        // Ed25519 over a card.
        let signParley = Self.microsPerOp(n) { _ = me.identity.sign(signedPart) }
        var ssk = [UInt8](repeating: 0, count: Int(crypto_sign_SECRETKEYBYTES))
        var spk = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        crypto_sign_keypair(&spk, &ssk)
        var sig = [UInt8](repeating: 0, count: 64)
        let signRaw = Self.microsPerOp(n) {
            _ = crypto_sign_detached(&sig, nil, signedPart, UInt64(signedPart.count), ssk)
        }
        let verifyParley = Self.microsPerOp(n) { _ = try? Card.decode(cardBytes) }
        let verifyRaw = Self.microsPerOp(n) {
            _ = crypto_sign_verify_detached(sig, signedPart, UInt64(signedPart.count), spk)
        }

        var rows = [
            BenchRow(
                id: "1a", measure: "X25519 key generation", unit: "µs", parley: keygenParley, reference: keygenRaw,
                referenceName: "libsodium crypto_scalarmult_base", goal: .none),
            BenchRow(
                id: "1b", measure: "X25519 DH", unit: "µs", parley: dhParley, reference: dhRaw,
                referenceName: "libsodium crypto_scalarmult", goal: .none),
            BenchRow(
                id: "1c", measure: "Ed25519 sign (card, once per start)", unit: "µs", parley: signParley,
                reference: signRaw,
                referenceName: "libsodium crypto_sign_detached", goal: .none),
            BenchRow(
                id: "1d", measure: "Ed25519 verify (Card.decode)", unit: "µs", parley: verifyParley,
                reference: verifyRaw,
                referenceName: "libsodium crypto_sign_verify_detached", goal: .none)
        ]

        // ChaCha20-Poly1305 through SessionTransport.seal vs the bare AEAD call.
        var transport = try Self.transport()
        let key = Sodium.randomBytes(32)
        let nonce = [UInt8](repeating: 0, count: 12)
        var aead64k = 0.0
        for (label, size) in [("64 B", 64), ("4 KiB", 4096), ("64 KiB", WireLimits.maxPlaintextPerMessage)] {
            let plain = [UInt8](repeating: 0x61, count: size)
            let ops = max(scale.aeadBytes / size, 20)
            let parleyUs = Self.microsPerOp(ops) { _ = try? transport.seal(plain) }
            var out = [UInt8](repeating: 0, count: size + 16)
            let rawUs = Self.microsPerOp(ops) {
                _ = crypto_aead_chacha20poly1305_ietf_encrypt(&out, nil, plain, UInt64(size), nil, 0, nil, nonce, key)
            }
            let parleyMBps = Double(size) / parleyUs
            let rawMBps = Double(size) / rawUs
            if size > 4096 { aead64k = rawMBps }
            rows.append(
                BenchRow(
                    id: "1e", measure: "ChaCha20-Poly1305 seal \(label)", unit: "MB/s",
                    parley: parleyMBps, reference: rawMBps,
                    referenceName: "libsodium aead_chacha20poly1305_ietf_encrypt", goal: .none,
                    note: size > 4096 ? "64 KiB row: 65 519 B, the largest plaintext of one Noise message" : ""))
        }

        let floor = Floor(
            parleyMicros: keygenParley + Self.dhPerSide * dhParley + verifyParley,
            libsodiumMicros: keygenRaw + Self.dhPerSide * dhRaw + verifyRaw)
        rows.append(
            BenchRow(
                id: "1f", measure: "Floor: one XX side (1 keygen + 3 DH + 1 verify)", unit: "µs",
                parley: floor.parleyMicros, reference: floor.libsodiumMicros,
                referenceName: "same sum from bare libsodium", goal: .none,
                note: "card signed once at start, not per handshake"))
        return (rows, floor, aead64k)
    }

    /// A transport from a real in-process handshake.
    static func transport() throws -> SessionTransport {
        let a = try BenchIdentity(name: "a")
        let b = try BenchIdentity(name: "b")
        var i = a.handshake(role: .initiator)
        var r = b.handshake(role: .responder)
        guard case .send(let m2) = try r.receive(try i.start()),
            case .established(let m3, let est) = try i.receive(m2),
            let m3, case .established = try r.receive(m3)
        else {
            throw BenchError.protocolError("in-process handshake did not complete")
        }
        return est.transport
    }

    /// Mean µs per call of `body`, best of three rounds of `n` calls (the least disturbed).
    static func microsPerOp(_ n: Int, _ body: () -> Void) -> Double {
        var best = Double.infinity
        for _ in 0..<3 {
            let t0 = Clock.threadCPUNs()
            for _ in 0..<n { body() }
            best = min(best, Double(Clock.threadCPUNs() - t0) / Double(n) / 1000)
        }
        return best
    }
}
