import CSodium

/// The one secret of a `parley web` run, and what is derived from it (docs/WEB.md "Signing
/// in"). It is made fresh at start, lives only in this process's memory and in the sign-in
/// link's **fragment** (`http://127.0.0.1:PORT/#k=SECRET`), which a browser never sends to
/// any server; the page keeps it in `sessionStorage` (one tab, one origin). It never travels
/// in a cookie, a URL path or query, or a header as itself:
///
/// - on the WebSocket the page and the server each prove they know it (HMAC-SHA-256 over
///   the other side's nonce and the page's origin, `serverProof` / `pageProof`), the server
///   first, so a server that cannot prove it (another local user squatting the port) learns
///   nothing and the page tells the person;
/// - an upload carries `uploadKey`, a value derived from it, in a header: worth nothing
///   beyond this run's uploads, and sent only by a page whose WebSocket has authenticated.
///
/// HMAC-SHA-256 (`crypto_auth_hmacsha256`, the same construction WebCrypto has), with a
/// label per use so no value can be replayed as another.
public struct WebSignInKey: Sendable, CustomStringConvertible {
    public static let serverProofLabel = "parley-web v1 server proof"
    public static let pageProofLabel = "parley-web v1 page proof"
    public static let uploadKeyLabel = "parley-web v1 upload key"

    /// The secret (what the fragment carries, as 64 hex digits).
    public let secret: WebSecret

    public init(secret: WebSecret) { self.secret = secret }

    /// A fresh key for a new run.
    public static func random() -> WebSignInKey { WebSignInKey(secret: .random()) }

    /// What the server sends to prove it holds the secret: HMAC(secret, label ‖ "\n" ‖
    /// origin ‖ "\n" ‖ pageNonce), hex. `origin` is the page's origin (the upgrade's
    /// `Origin`): a proof made for one port does not pass on another, so a squatter that
    /// relays the page's challenge to the person's real server gains nothing.
    public func serverProof(origin: Substring, pageNonce: Substring) -> String {
        hmacHex([Self.serverProofLabel, String(origin), String(pageNonce)])
    }

    /// What the page sends to prove it holds the secret: over both nonces, so it answers
    /// this server's challenge and no other.
    public func pageProof(origin: Substring, pageNonce: Substring, serverNonce: Substring) -> String {
        hmacHex([Self.pageProofLabel, String(origin), String(pageNonce), String(serverNonce)])
    }

    /// The `X-Parley-Auth` value an upload carries.
    public var uploadKey: String { hmacHex([Self.uploadKeyLabel]) }

    /// Whether `candidate` is `uploadKey`, in constant time.
    public func isUploadKey(_ candidate: Substring) -> Bool { Self.constantTimeEqual(uploadKey, candidate) }

    /// HMAC-SHA-256 keyed with the secret's 32 bytes over the parts joined by "\n" (no
    /// part contains one: labels are fixed, origins and nonces are checked before).
    func hmacHex(_ parts: [String]) -> String {
        WebSodium.ensureInitialised()
        let message = Array(parts.joined(separator: "\n").utf8)
        let key = secret.bytes
        var mac = [UInt8](repeating: 0, count: Int(crypto_auth_hmacsha256_BYTES))
        var state = crypto_auth_hmacsha256_state()
        _ = crypto_auth_hmacsha256_init(&state, key, key.count)
        _ = crypto_auth_hmacsha256_update(&state, message, UInt64(message.count))
        _ = crypto_auth_hmacsha256_final(&state, &mac)
        return WebSecret.hex(mac)
    }

    /// `sodium_memcmp` over equal lengths; a different length is refused at once (lengths
    /// are public).
    public static func constantTimeEqual(_ mine: String, _ theirs: Substring) -> Bool {
        let a = Array(mine.utf8)
        let b = Array(theirs.utf8)
        guard a.count == b.count, !a.isEmpty else { return false }
        return sodium_memcmp(a, b, a.count) == 0
    }

    public var description: String { "WebSignInKey(…)" }
}
