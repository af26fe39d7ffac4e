import NIOCore

/// The part of the daemon's configuration the node itself needs: a plain value.
struct NodeOptions: Sendable {
    /// How long a handshake may take before the connection is dropped.
    var handshakeTimeout: TimeAmount = .seconds(5)
    /// Send a ping when nothing was sent for this long.
    var pingInterval: TimeAmount = .seconds(5)
    /// A session that received nothing for this long is dead (3 missed pings).
    var deadAfter: TimeAmount = .seconds(15)
    /// Unacknowledged messages per session before the outbox waits for acks.
    var sendWindow = 2_000
    /// And at most this many body bytes unacknowledged per session, so a peer that
    /// stops reading holds at most this much of our memory in socket buffers.
    var sendWindowBytes = 4 * 1_048_576
    /// Messages sent but not acknowledged this long are sent again on the same session.
    var ackTimeout: TimeAmount = .seconds(30)
    /// Reconnect backoff for static and discovered peers.
    var redialInitial: TimeAmount = .milliseconds(500)
    var redialMax: TimeAmount = .seconds(30)
}
