import FuzzFixtures
import ParleyCore

/// Arbitrary bytes against a handshake responder (fixed card and keys, see FuzzFixtures),
/// in the three places a stranger can put them:
///  1. as message 1 (the first bytes a dialer sends);
///  2. as message 3, after a valid message 1 from an honest initiator;
///  3. as the *payload* of message 3, encrypted by an honest initiator, so the bytes
///     reach the payload and card checks that (2) can only reach with a recorded seed.
/// The responder must answer each with a `SessionHandshakeError` or a step, never trap,
/// and once it has failed it must refuse every further message.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandshakeResponder(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    asMessage1(bytes)
    asMessage3(bytes)
    asMessage3Payload(bytes)
    return 0
}

private func asMessage1(_ bytes: [UInt8]) {
    var responder = FuzzFixtures.responderHandshake()
    do {
        guard case .send = try responder.receive(bytes) else {
            preconditionFailure("a responder finished on message 1")
        }
    } catch {
        refusesFurtherMessages(&responder, bytes)
    }
}

private func asMessage3(_ bytes: [UInt8]) {
    var responder = afterMessage2.responder
    do {
        guard case .established(let final, let session) = try responder.receive(bytes) else {
            preconditionFailure("a responder did not finish on message 3")
        }
        precondition(final == nil)
        precondition(
            session.remoteCard == FuzzFixtures.initiator.card,
            "established with a card other than the initiator's")
    } catch {
        refusesFurtherMessages(&responder, bytes)
    }
}

private func asMessage3Payload(_ bytes: [UInt8]) {
    var initiator = afterMessage2.initiator
    var responder = afterMessage2.responder
    // Message 3 is s (encrypted: key + tag) + payload + tag, all in one Noise message.
    let overhead = NoiseConstants.dhLength + 2 * NoiseConstants.tagLength
    let payload = Array(bytes.prefix(NoiseConstants.maxMessageLength - overhead))
    guard let m3 = try? initiator.writeMessage(payload: payload) else {
        preconditionFailure("the initiator could not write message 3")
    }
    do {
        guard case .established(_, let session) = try responder.receive(m3) else {
            preconditionFailure("a responder did not finish on message 3")
        }
        // Only the initiator's own card can match the static key the handshake proved.
        precondition(session.remoteCard.noiseKey == FuzzFixtures.initiator.staticKey.publicKey)
    } catch {
        refusesFurtherMessages(&responder, m3)
    }
}

private func refusesFurtherMessages(_ responder: inout SessionHandshake, _ bytes: [UInt8]) {
    do {
        _ = try responder.receive(bytes)
        preconditionFailure("a failed responder accepted another message")
    } catch {
        precondition(error == .unexpectedMessage)
    }
}

/// Both sides of an honest handshake just before message 3, computed once: every input
/// starts from a copy. Copies are independent (value types; the secrets they share are
/// immutable), and with the fixtures' fixed ephemerals they are the exact states a
/// recorded message 3 seed was made against. `nonisolated(unsafe)`: read-only after
/// initialisation, and libFuzzer runs inputs on one thread.
nonisolated(unsafe) private let afterMessage2: (responder: SessionHandshake, initiator: HandshakeState<NoiseSHA256>) = {
    var initiator = FuzzFixtures.initiatorNoise()
    var responder = FuzzFixtures.responderHandshake()
    // Force-tries safe: an honest handshake between the fixtures always gets this far;
    // if it does not, the fixtures are broken and the first input says so.
    let m1 = try! initiator.writeMessage(payload: [])
    guard case .send(let m2) = try! responder.receive(m1) else {
        preconditionFailure("the responder finished on message 1")
    }
    _ = try! initiator.readMessage(m2)
    return (responder, initiator)
}()
