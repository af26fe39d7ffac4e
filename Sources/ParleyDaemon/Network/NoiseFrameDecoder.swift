import NIOCore
import ParleyCore

/// The NIO side of framing: a thin adapter that lets `FrameDecoder.scan` (ParleyCore, the
/// parser the unit tests and the fuzz target exercise) find frames in NIO's receive
/// buffer, and passes each payload on as one Noise message. It has no parsing rule of its
/// own, and it copies no payload: each is passed on as a slice of the buffer NIO already
/// accumulates (it shares that storage; `PeerConnection` decrypts it at once and drops it,
/// before the next read appends, so the slice never forces a copy-on-write either).
///
/// A zero length is an error: `ByteToMessageHandler` then reports it through
/// `errorCaught` (the `PeerConnection` closes the connection) and ignores the rest of the
/// stream. A peer can make it buffer at most one maximal frame plus what one read adds.
final class NoiseFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        switch buffer.withUnsafeReadableBytes(FrameDecoder.scan) {
        case .needMoreBytes:
            return .needMoreData
        case .invalid(let error):
            throw error
        case .frame(let payload):
            // Force-unwrap safe: the scan saw all of the payload among the readable bytes.
            let message = buffer.getSlice(at: buffer.readerIndex + payload.lowerBound, length: payload.count)!
            buffer.moveReaderIndex(forwardBy: payload.upperBound)
            context.fireChannelRead(wrapInboundOut(message))
            return .continue
        }
    }

    func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}
