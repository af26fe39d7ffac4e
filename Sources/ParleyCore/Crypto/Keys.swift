import CSodium

/// Errors from key construction and key agreement.
public enum KeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A key or signature had the wrong number of bytes.
    case wrongLength(what: String, expected: Int, got: Int)
    /// X25519 produced the all-zero shared secret: the peer sent a low-order point.
    case lowOrderPoint

    public var description: String {
        switch self {
        case let .wrongLength(what, expected, got): return "\(what) must be \(expected) bytes, got \(got)"
        case .lowOrderPoint: return "key agreement produced an all-zero secret (low-order public key)"
        }
    }
}

// MARK: - Identity (Ed25519)

/// A node's long-term Ed25519 public key: the thing a fingerprint names.
public struct IdentityPublicKey: Hashable, Sendable {
    public static let length = 32
    public let bytes: [UInt8]

    public func hash(into hasher: inout Hasher) { hashFixedLengthBytes(bytes, into: &hasher) }

    public init(bytes: [UInt8]) throws(KeyError) {
        guard bytes.count == Self.length else {
            throw .wrongLength(what: "identity public key", expected: Self.length, got: bytes.count)
        }
        self.bytes = bytes
    }

    /// Verifies a detached Ed25519 signature (64 bytes) over `message`.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        Sodium.ensureInitialized()
        guard signature.count == Int(crypto_sign_BYTES) else { return false }
        return signature.withUnsafeBufferPointer { sig in
            message.withUnsafeBufferPointer { msg in
                bytes.withUnsafeBufferPointer { pk in
                    crypto_sign_verify_detached(sig.baseAddress!, msg.baseAddress, UInt64(msg.count), pk.baseAddress!)
                        == 0
                }
            }
        }
    }

    public var hex: String { Sodium.hex(bytes) }

    /// The key from its hex (control params, JSON); nil for anything else.
    public init?(hex: String) {
        guard let bytes = Sodium.fromHex(hex), let key = try? IdentityPublicKey(bytes: bytes) else { return nil }
        self = key
    }
}

/// A node's long-term Ed25519 signing key. Only signs cards (and room operations).
public final class IdentityKeyPair: Sendable {
    public static let seedLength = 32
    public let publicKey: IdentityPublicKey
    /// libsodium's 64-byte secret key (seed || public key).
    private let secretKey: SecretBytes
    /// The 32-byte seed: what the key file stores.
    public let seed: SecretBytes

    /// A fresh random identity.
    public static func generate() -> IdentityKeyPair {
        // Force-unwrap safe: a random seed has the right length by construction.
        try! IdentityKeyPair(seed: SecretBytes.random(seedLength))
    }

    /// Deterministic identity from a 32-byte seed (key files, tests).
    public init(seed: SecretBytes) throws(KeyError) {
        guard seed.count == Self.seedLength else {
            throw .wrongLength(what: "identity seed", expected: Self.seedLength, got: seed.count)
        }
        Sodium.ensureInitialized()
        var pk = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        let sk = SecretBytes(count: Int(crypto_sign_SECRETKEYBYTES)) { skp in
            pk.withUnsafeMutableBufferPointer { pkp in
                seed.withPointer { sp in _ = crypto_sign_seed_keypair(pkp.baseAddress!, skp, sp) }
            }
        }
        self.seed = seed
        self.secretKey = sk
        self.publicKey = try IdentityPublicKey(bytes: pk)
    }

    /// Detached Ed25519 signature (64 bytes).
    public func sign(_ message: [UInt8]) -> [UInt8] {
        var sig = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
        sig.withUnsafeMutableBufferPointer { sp in
            message.withUnsafeBufferPointer { mp in
                secretKey.withPointer { kp in
                    _ = crypto_sign_detached(sp.baseAddress!, nil, mp.baseAddress, UInt64(mp.count), kp)
                }
            }
        }
        return sig
    }
}

// MARK: - Noise keys (X25519)

/// An X25519 public key as used by Noise (static or ephemeral: on the wire they are alike).
public struct NoisePublicKey: Hashable, Sendable {
    public static let length = 32
    public let bytes: [UInt8]

    public func hash(into hasher: inout Hasher) { hashFixedLengthBytes(bytes, into: &hasher) }

    public init(bytes: [UInt8]) throws(KeyError) {
        guard bytes.count == Self.length else {
            throw .wrongLength(what: "Noise public key", expected: Self.length, got: bytes.count)
        }
        self.bytes = bytes
    }

    public var hex: String { Sodium.hex(bytes) }
}

/// What Noise needs from a key pair: a public key and Diffie-Hellman.
/// Two distinct types conform so a static key can never be passed where an
/// ephemeral one belongs, and the reverse.
public protocol DHKeyPair: Sendable {
    var publicKey: NoisePublicKey { get }
    /// X25519(private, remote). Throws `KeyError.lowOrderPoint` on an all-zero result,
    /// which Noise treats as a handshake failure.
    func dh(_ remote: NoisePublicKey) throws(KeyError) -> SecretBytes
}

/// Shared implementation for the two X25519 key-pair types.
struct X25519Secret: Sendable {
    static let length = 32
    let privateKey: SecretBytes
    let publicKey: NoisePublicKey

    init(privateKey: SecretBytes) throws(KeyError) {
        guard privateKey.count == Self.length else {
            throw .wrongLength(what: "X25519 private key", expected: Self.length, got: privateKey.count)
        }
        Sodium.ensureInitialized()
        var pk = [UInt8](repeating: 0, count: 32)
        privateKey.withPointer { sk in
            pk.withUnsafeMutableBufferPointer { _ = crypto_scalarmult_base($0.baseAddress!, sk) }
        }
        self.privateKey = privateKey
        self.publicKey = try NoisePublicKey(bytes: pk)
    }

    func dh(_ remote: NoisePublicKey) throws(KeyError) -> SecretBytes {
        var rc: Int32 = 0
        let shared = SecretBytes(count: 32) { out in
            privateKey.withPointer { sk in
                remote.bytes.withUnsafeBufferPointer { rp in
                    rc = crypto_scalarmult(out, sk, rp.baseAddress!)
                }
            }
        }
        // libsodium already returns -1 for an all-zero output; check both ways so a
        // future library change cannot silently weaken this.
        let zero = shared.withUnsafeBytes { sodium_is_zero($0.bindMemory(to: UInt8.self).baseAddress, 32) == 1 }
        if rc != 0 || zero { throw .lowOrderPoint }
        return shared
    }
}

/// A node's long-term Noise static key (the `s` of the Noise spec).
public final class NoiseStaticKeyPair: DHKeyPair {
    private let inner: X25519Secret
    public var publicKey: NoisePublicKey { inner.publicKey }
    /// The private scalar: what the key file stores.
    public var privateKey: SecretBytes { inner.privateKey }

    public static func generate() -> NoiseStaticKeyPair {
        try! NoiseStaticKeyPair(privateKey: .random(X25519Secret.length))  // length correct by construction
    }
    public init(privateKey: SecretBytes) throws(KeyError) { inner = try X25519Secret(privateKey: privateKey) }
    public func dh(_ remote: NoisePublicKey) throws(KeyError) -> SecretBytes { try inner.dh(remote) }
}

/// A per-handshake Noise ephemeral key (the `e` of the Noise spec).
public final class NoiseEphemeralKeyPair: DHKeyPair {
    private let inner: X25519Secret
    public var publicKey: NoisePublicKey { inner.publicKey }

    public static func generate() -> NoiseEphemeralKeyPair {
        try! NoiseEphemeralKeyPair(privateKey: .random(X25519Secret.length))  // length correct by construction
    }
    /// Fixed ephemeral key: only test vectors should need this.
    public init(privateKey: SecretBytes) throws(KeyError) { inner = try X25519Secret(privateKey: privateKey) }
    public func dh(_ remote: NoisePublicKey) throws(KeyError) -> SecretBytes { try inner.dh(remote) }
}
