import NIOCore

/// Closes an HTTP connection whose client has stopped reading (`WebLimits.responseWriteStallSeconds`).
///
/// A response body is written as fast as the client reads it: when the client stops, the
/// socket's send buffer fills, the channel turns unwritable and the writer waits, for ever:
/// a paused download of a received file held its descriptor and one of the few file slots
/// (`WebLimits.maxConcurrentFileResponses`) until `parley web` stopped, and four of them shut
/// every download out. So: unwritable for the whole stall time means no progress; the
/// connection is closed, the waiting write fails, and the response lets go of what it holds.
/// Any progress (the channel writable again) starts the clock afresh.
///
/// Only on plain HTTP connections (Hummingbird adds it after the HTTP codec, on the
/// connections that were not upgraded); a WebSocket is kept in check by its pings.
final class WebWriteStallHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let timeout: TimeAmount
    private var stall: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if !context.channel.isWritable { startClock(context) }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            stopClock()
        } else {
            startClock(context)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopClock()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopClock()
    }

    private func startClock(_ context: ChannelHandlerContext) {
        guard stall == nil else { return }
        let channel = context.channel
        stall = context.eventLoop.scheduleTask(in: timeout) {
            channel.close(mode: .all, promise: nil)
        }
    }

    private func stopClock() {
        stall?.cancel()
        stall = nil
    }
}
