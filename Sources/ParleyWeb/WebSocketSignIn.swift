import HummingbirdWebSocket
import NIOCore
import ParleyWebCore

/// Drives `WebAuthHandshake` on a new WebSocket: the page and this server prove to each
/// other that they hold the run's secret, the server first, within
/// `WebLimits.signInTimeoutSeconds`. Nothing is relayed, and no daemon connection is
/// opened, before it succeeds.
enum WebSocketSignIn {
    /// True once signed in; false after it closed the WebSocket (a wrong proof, something
    /// else than the handshake, the page left, the time ran out, or `admit` said no: it is
    /// asked once the page's proof checks, before the page is told it is signed in).
    static func run(
        key: WebSignInKey, origin: Substring, probeOnly: Bool = false, messages: PageMessages,
        outbound: WebSocketOutboundWriter, admit: @escaping @Sendable () -> WebRefusal?
    ) async -> Bool {
        let signedIn = await withTaskGroup(of: Bool?.self) { group in
            group.addTask {
                await handshake(
                    key: key, origin: origin, probeOnly: probeOnly, messages: messages, outbound: outbound,
                    admit: admit)
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(WebLimits.signInTimeoutSeconds))
                return Task.isCancelled ? nil : false
            }
            // The first to finish ends the other (cancelled, and awaited: the messages are
            // never read by two tasks); only the handshake's own answer signs in, so a slot
            // `admit` gave is never lost to the timer.
            var signedIn = false
            for await result in group {
                if result == true { signedIn = true }
                group.cancelAll()
            }
            return signedIn
        }
        if !signedIn {
            // Already closed with its reason when the handshake decided; else the time ran out.
            try? await outbound.close(.policyViolation, reason: WebAuthHandshake.refusedReason)
        }
        return signedIn
    }

    static func handshake(
        key: WebSignInKey, origin: Substring, probeOnly: Bool, messages: PageMessages,
        outbound: WebSocketOutboundWriter, admit: @Sendable () -> WebRefusal?
    ) async -> Bool {
        var machine = WebAuthHandshake(key: key, origin: origin, probeOnly: probeOnly)
        while let message = try? await messages.next() {
            let bytes: [UInt8]
            switch message {
            case .text(let text): bytes = Array(text.utf8)
            case .binary(let buffer): bytes = Array(buffer.readableBytesView)
            }
            switch machine.receive(bytes, serverNonce: .random()) {
            case .send(let text):
                guard (try? await outbound.write(.text(text))) != nil else { return false }
            case .authenticated(let text):
                if let refusal = admit() {
                    try? await outbound.close(.unknown(1013), reason: refusal.message)
                    return false
                }
                // Admitted: the relay that follows gives the slot back, even if this write
                // failed (the relay then ends at once).
                _ = try? await outbound.write(.text(text))
                return true
            case .refuse(let reason):
                try? await outbound.close(.policyViolation, reason: reason)
                return false
            case .proveAndEnd(let text):
                _ = try? await outbound.write(.text(text))
                try? await outbound.close(.normalClosure, reason: nil)
                return false
            }
        }
        return false
    }
}
