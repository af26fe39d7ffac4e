import NIOCore
import ParleyNodeCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The socket options of every peer connection, inbound and outbound, set in this one
/// place (docs/PROTOCOL.md "Liveness").
enum SessionSocketOptions {
    /// One option and why it is set.
    struct Setting {
        let option: ChannelOptions.Types.SocketOption
        let value: SocketOptionValue
    }

    /// - TCP_NODELAY: a chat message is one small write; Nagle would hold it for the ACK
    ///   of the previous one (up to 40 ms on Linux with delayed ACKs).
    /// - SO_KEEPALIVE with TCP_KEEPIDLE / TCP_KEEPINTVL / TCP_KEEPCNT (`KernelKeepalive`):
    ///   the kernel probes an idle session and reports a cut link within `deadAfter`,
    ///   without waking the daemon (issue 21: wake-ups of an idle daemon).
    /// - TCP_USER_TIMEOUT: data (a message, a ping) written into a cut link fails the
    ///   connection after `deadAfter` instead of after ~15 minutes of retransmissions.
    static func settings(deadAfter: Duration) -> [Setting] {
        let k = KernelKeepalive(deadAfter: deadAfter)
        let tcp = NIOBSDSocket.OptionLevel.tcp
        return [
            Setting(option: .init(level: tcp, name: .tcp_nodelay), value: 1),
            Setting(option: .init(level: .socket, name: .so_keepalive), value: 1),
            Setting(
                option: .init(level: tcp, name: .init(rawValue: TCP_KEEPIDLE)), value: SocketOptionValue(k.idleSeconds)),
            Setting(
                option: .init(level: tcp, name: .init(rawValue: TCP_KEEPINTVL)),
                value: SocketOptionValue(k.intervalSeconds)),
            Setting(
                option: .init(level: tcp, name: .init(rawValue: TCP_KEEPCNT)), value: SocketOptionValue(k.probeCount)),
            Setting(
                option: .init(level: tcp, name: .init(rawValue: TCP_USER_TIMEOUT)),
                value: SocketOptionValue(clamping: k.userTimeoutMilliseconds))
        ]
    }

    /// Applies every setting to a new connection's channel (from its initializer, on its loop).
    static func apply(to channel: Channel, deadAfter: Duration) throws {
        let options = channel.syncOptions
        for s in settings(deadAfter: deadAfter) { try options?.setOption(s.option, value: s.value) }
    }
}
