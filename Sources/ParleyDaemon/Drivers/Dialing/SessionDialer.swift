import NIOCore
import NIOPosix
import ParleyNodeCore

/// Opens the TCP connection of one dial: the client bootstrap with the session's socket
/// options (address reuse, the write-buffer water mark, the receive allocator, the kernel
/// keepalive derived from dead-after) and the pipeline (`NoiseFrameDecoder`, then the
/// connection's handler). What becomes of the connection is the handler's business; a
/// connect that fails is reported to `failed` on the loop.
enum SessionDialer {
    static func dial(
        _ conn: PeerConnection, to address: DialAddress, on loop: EventLoop, connectTimeout: TimeAmount,
        deadAfter: Duration, failed: @escaping (Error) -> Void
    ) {
        // The handler is created on the loop, and only ever used on it.
        let bound = NIOLoopBound(conn, eventLoop: loop)
        let report = NIOLoopBound(failed, eventLoop: loop)
        ClientBootstrap(group: loop)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.writeBufferWaterMark, value: PeerConnection.outboundWaterMark)
            .channelOption(.recvAllocator, value: NoiseFrameDecoder.receiveAllocator)
            .connectTimeout(connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try SessionSocketOptions.apply(to: channel, deadAfter: deadAfter)
                    try channel.pipeline.syncOperations.addHandler(NoiseFrameDecoder())
                    try channel.pipeline.syncOperations.addHandler(bound.value)
                }
            }
            .connect(host: address.host, port: Int(address.port))
            .whenComplete { result in
                guard case .failure(let error) = result else { return }
                report.value(error)
            }
    }
}
