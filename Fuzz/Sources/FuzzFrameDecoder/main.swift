import ParleyCore

/// Arbitrary bytes as a TCP stream: fed whole, then again in pieces whose sizes come
/// from the input itself, so both the one-read and the split-read paths run. Both runs
/// must yield the same frames (framing must not depend on how TCP cut the stream).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrameDecoder(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []

    var whole = FrameDecoder()
    whole.append(bytes)
    let expected = drain(&whole)

    var split = FrameDecoder()
    var frames: [[UInt8]] = []
    var failed: FrameError?
    var offset = 0
    var piece = 0
    while offset < bytes.count {
        // Piece sizes 1...16, taken from the data so every input splits its own way.
        let length = min(bytes.count - offset, Int(bytes[piece % bytes.count] & 0x0F) + 1)
        piece += 1
        split.append(bytes[offset..<(offset + length)])
        offset += length
        let result = drain(&split)
        frames += result.frames
        if let error = result.error {
            failed = error
            break
        }
    }
    if failed == nil { frames += drain(&split).frames }

    precondition(frames == expected.frames, "frames differ between one read and split reads")
    // The stateless scan (what the daemon's NIO handler runs on its receive buffer) must
    // agree with the decoder on the first frame.
    switch bytes.withUnsafeBytes(FrameDecoder.scan) {
    case .needMoreBytes: precondition(expected.frames.isEmpty && expected.error == nil)
    case .invalid(let error): precondition(expected.frames.isEmpty && expected.error == error)
    case .frame(let payload): precondition(expected.frames.first.map { $0[...] } == bytes[payload])
    }
    precondition(failed == expected.error, "errors differ between one read and split reads")
    // The documented bound once drained: at most one incomplete frame is buffered.
    precondition(
        expected.error != nil
            || whole.bufferedByteCount <= Frame.headerLength + Frame.maxPayloadLength - 1)
    return 0
}

private func drain(_ decoder: inout FrameDecoder) -> (frames: [[UInt8]], error: FrameError?) {
    var frames: [[UInt8]] = []
    do {
        while let frame = try decoder.next() {
            precondition(frame.count >= Frame.minPayloadLength && frame.count <= Frame.maxPayloadLength)
            frames.append(frame)
        }
        return (frames, nil)
    } catch {
        // Errors are sticky: the next call must throw the same error.
        do {
            _ = try decoder.next()
            preconditionFailure("error was not sticky")
        } catch let again {
            precondition(again == error)
        }
        return (frames, error)
    }
}
