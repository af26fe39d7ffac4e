import ParleyControlProtocol

/// The sign-in at the start of every WebSocket, before any request is relayed (pure;
/// `WebServer` drives it). Both sides hold the run's secret (`WebSignInKey`); neither sends
/// it. The **server proves itself first**, so the page gives nothing (not even a proof of
/// its own) to a server that cannot:
///
/// ```
/// page   → {"auth":"hello","nonce":PN}                          PN: 32 random bytes, hex
/// server → {"auth":"proof","proof":SP,"nonce":SN}               SP = serverProof(origin, PN)
/// page   → {"auth":"proof","proof":PP}   (only if SP checks)    PP = pageProof(origin, PN, SN)
/// server → {"auth":"ok"}                 (only if PP checks)    then JSON-RPC, docs/CONTROL.md
/// ```
///
/// `origin` is the upgrade request's `Origin` (already checked to be this server's own).
/// Anything else, in any order, ends the WebSocket (`refuse`).
public struct WebAuthHandshake: Sendable {
    public enum Action: Sendable, Equatable {
        /// Send this text message and wait for the next.
        case send(String)
        /// Send this text message; the page is signed in: relay from now on.
        case authenticated(String)
        /// Close the WebSocket with this reason (a policy violation).
        case refuse(String)
        /// Send this text message, then close normally: a probe's proof (nothing more).
        case proveAndEnd(String)
    }

    enum State: Sendable {
        case awaitingHello
        case awaitingProof(pageNonce: String, serverNonce: String)
        case finished
    }

    /// The close reason the page shows when its proof is wrong (a tab of an earlier run).
    public static let refusedReason = "not signed in: open the sign-in link of this parley web again"
    public static let malformedReason = "expected the sign-in handshake"

    let key: WebSignInKey
    let origin: Substring
    /// The sign-in file's check (`WebRequestDecision.probe`): the server proves itself and
    /// the socket ends; a page proof is never taken.
    let probeOnly: Bool
    var state = State.awaitingHello

    public init(key: WebSignInKey, origin: Substring, probeOnly: Bool = false) {
        self.key = key
        self.origin = origin
        self.probeOnly = probeOnly
    }

    /// One message from the page. `serverNonce` is a fresh random value (injected for tests).
    public mutating func receive(_ message: [UInt8], serverNonce: WebSecret) -> Action {
        guard message.count <= WebLimits.maxAuthMessageBytes,
            let members = try? JSONValue(parsing: message).objectValue,
            case .string(let kind)? = members["auth"]
        else { return fail(Self.malformedReason) }
        switch (state, kind) {
        case (.awaitingHello, "hello"):
            guard case .string(let pageNonce)? = members["nonce"], WebSecret(parsing: Substring(pageNonce)) != nil
            else { return fail(Self.malformedReason) }
            let proof = key.serverProof(origin: origin, pageNonce: Substring(pageNonce))
            if probeOnly {
                state = .finished
                return .proveAndEnd(#"{"auth":"proof","proof":"\#(proof)"}"#)
            }
            state = .awaitingProof(pageNonce: pageNonce, serverNonce: serverNonce.text)
            return .send(#"{"auth":"proof","proof":"\#(proof)","nonce":"\#(serverNonce.text)"}"#)
        case (.awaitingProof(let pageNonce, let serverNonce), "proof"):
            guard case .string(let proof)? = members["proof"] else { return fail(Self.malformedReason) }
            let expected = key.pageProof(
                origin: origin, pageNonce: Substring(pageNonce), serverNonce: Substring(serverNonce))
            guard WebSignInKey.constantTimeEqual(expected, Substring(proof)) else { return fail(Self.refusedReason) }
            state = .finished
            return .authenticated(#"{"auth":"ok"}"#)
        default:
            return fail(Self.malformedReason)
        }
    }

    mutating func fail(_ reason: String) -> Action {
        state = .finished
        return .refuse(reason)
    }
}
