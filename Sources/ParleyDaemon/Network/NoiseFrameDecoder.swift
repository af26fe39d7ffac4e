import NIOCore
import ParleyCore

/// Cuts the TCP byte stream into frames: a 2-byte big-endian length, then that many
/// bytes (one Noise message). The length is never trusted beyond its 16 bits, so a
/// peer can make us buffer at most one maximal frame; a zero length is an error.
final class NoiseFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = [UInt8]

    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self) else { return .needMoreData }
        guard length > 0 else { throw FrameError.emptyFrame }
        guard buffer.readableBytes >= Frame.headerLength + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: Frame.headerLength)
        // Force-unwrap safe: readableBytes was checked just above.
        let payload = buffer.readBytes(length: Int(length))!
        context.fireChannelRead(wrapInboundOut(payload))
        return .continue
    }

    func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}
