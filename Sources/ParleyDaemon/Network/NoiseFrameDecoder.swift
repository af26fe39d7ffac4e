import NIOCore
import ParleyCore

/// The NIO side of framing: finds frames in each buffer NIO reads with `FrameDecoder.scan`
/// (ParleyCore, the parser the unit tests and the fuzz target exercise) and passes each
/// payload on as one Noise message. It has no parsing rule of its own.
///
/// It copies only what it must: a frame that lies whole in one read is passed on as a slice
/// of that read (`PeerConnection` decrypts it at once and drops it); only a frame split
/// across two reads is put together, its bytes copied once into a buffer of exactly its size.
/// (NIO's `ByteToMessageHandler`, used before, copied every read that followed a partial
/// frame whole into the buffer holding it, after growing that buffer: with 64 KiB file
/// chunks nearly every frame is split, so each received byte was copied once or twice more.)
/// Larger reads (`receiveAllocator`) make split frames fewer.
///
/// A zero length is an error: it is reported through `errorCaught` (the `PeerConnection`
/// closes the connection) and nothing more is read. A peer can make it hold at most one
/// maximal frame plus the read it came in.
final class NoiseFrameDecoder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Reads grow up to 256 KiB while a peer sends in bulk (a file) and shrink back when it is
    /// quiet (NIO's adaptive allocator, sized by how full the last reads were): with frames of
    /// at most 64 KiB, at most one frame per read is split, so at most about a quarter of the
    /// bytes is copied to put it together. Not larger: NIO does up to 4 reads per loop turn
    /// before `channelReadComplete`, where a chat record that came in behind them is committed
    /// (1 MiB reads made 4 MiB turns and row 10b's chat latency during a file 2-7× idle). An
    /// idle session keeps NIO's 2 KiB start.
    static let maxReadBytes = 256 << 10
    static var receiveAllocator: AdaptiveRecvByteBufferAllocator {
        AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: maxReadBytes)
    }

    private enum Partial {
        /// The start of a frame, too short to know its length (under 2 bytes): a slice of the
        /// read it came in.
        case header(ByteBuffer)
        /// A frame being put together: `buffer` (capacity `total`) holds its first bytes.
        case assembling(ByteBuffer, total: Int)
    }

    private var partial: Partial?
    /// After an invalid frame nothing more is read.
    private var failed = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        var incoming = unwrapInboundIn(data)
        if partial != nil {
            guard complete(from: &incoming, context: context) else { return }
        }
        while !failed && incoming.readableBytes > 0 {
            switch incoming.withUnsafeReadableBytes(FrameDecoder.scan) {
            case .needMoreBytes:
                keepStart(of: incoming, context: context)
                return
            case .invalid(let error):
                fail(error, context: context)
                return
            case .frame(let payload):
                // Force-unwrap safe: the scan saw all of the payload among the readable bytes.
                let message = incoming.getSlice(at: incoming.readerIndex + payload.lowerBound, length: payload.count)!
                incoming.moveReaderIndex(forwardBy: payload.upperBound)
                context.fireChannelRead(wrapInboundOut(message))
            }
        }
    }

    /// The first bytes of a frame whose rest is in a later read.
    private func keepStart(of rest: ByteBuffer, context: ChannelHandlerContext) {
        guard rest.readableBytes >= Frame.headerLength else {
            partial = .header(rest)
            return
        }
        startAssembling(rest, context: context)
    }

    /// `start` holds at least the header (checked by the scan's rule): a buffer of exactly
    /// the frame's size receives its bytes, then the rest as it comes.
    private func startAssembling(_ start: ByteBuffer, context: ChannelHandlerContext) {
        var start = start
        let header = start.getBytes(at: start.readerIndex, length: Frame.headerLength)!
        let total: Int
        switch header.withUnsafeBytes(FrameDecoder.scan) {
        case .invalid(let error):
            fail(error, context: context)
            return
        case .frame(let payload):  // cannot happen: two bytes never hold a whole frame
            total = payload.upperBound
        case .needMoreBytes:
            total = Frame.headerLength + (Int(header[0]) << 8 | Int(header[1]))
        }
        var buffer = context.channel.allocator.buffer(capacity: total)
        buffer.writeBuffer(&start)
        partial = .assembling(buffer, total: total)
    }

    /// Feeds the partial frame from `incoming`; passes it on once whole. False if `incoming`
    /// ran out first (or the frame was invalid).
    private func complete(from incoming: inout ByteBuffer, context: ChannelHandlerContext) -> Bool {
        if case .header(var start) = partial {
            partial = nil
            // Under two bytes: put the header together (a byte or two), then assemble.
            var joined = context.channel.allocator.buffer(capacity: start.readableBytes + incoming.readableBytes)
            joined.writeBuffer(&start)
            let n = min(Frame.headerLength - joined.readableBytes, incoming.readableBytes)
            var head = incoming.readSlice(length: n)!
            joined.writeBuffer(&head)
            partial = nil
            guard joined.readableBytes >= Frame.headerLength else {
                partial = .header(joined)
                return false
            }
            startAssembling(joined, context: context)
            if failed { return false }
        }
        guard case .assembling(var buffer, let total) = partial else { return true }
        // Let go of `partial`'s reference first: with two references the write below copied the
        // whole buffer before adding to it (copy-on-write), once more per split frame.
        partial = nil
        let take = min(total - buffer.readableBytes, incoming.readableBytes)
        var piece = incoming.readSlice(length: take)!
        buffer.writeBuffer(&piece)
        guard buffer.readableBytes == total else {
            partial = .assembling(buffer, total: total)
            return false
        }
        let message = buffer.getSlice(at: buffer.readerIndex + Frame.headerLength, length: total - Frame.headerLength)!
        context.fireChannelRead(wrapInboundOut(message))
        return !failed
    }

    private func fail(_ error: Error, context: ChannelHandlerContext) {
        failed = true
        partial = nil
        context.fireErrorCaught(error)
    }
}
