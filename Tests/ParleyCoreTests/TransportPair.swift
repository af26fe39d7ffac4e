import ParleyCore

/// Both ends of a fresh session: an XX handshake run in memory, then `split()`. Shared by the
/// transport and record-stream tests.
func transportKeys() throws -> (initiator: TransportKeys, responder: TransportKeys) {
    var i = HandshakeState<NoiseSHA256>(role: .initiator, prologue: ProtocolVersion.prologue, staticKey: .generate())
    var r = HandshakeState<NoiseSHA256>(role: .responder, prologue: ProtocolVersion.prologue, staticKey: .generate())
    _ = try r.readMessage(try i.writeMessage(payload: []))
    _ = try i.readMessage(try r.writeMessage(payload: []))
    _ = try r.readMessage(try i.writeMessage(payload: []))
    return (try i.split(), try r.split())
}

func transportPair() throws -> (SessionTransport, SessionTransport) {
    let (ik, rk) = try transportKeys()
    return (SessionTransport(keys: ik), SessionTransport(keys: rk))
}
