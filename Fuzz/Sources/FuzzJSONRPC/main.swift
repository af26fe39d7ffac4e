import ParleyControlProtocol

/// Arbitrary bytes as what a control-socket client sends: cut into lines by
/// `LineBuffer` (whole and in pieces, with the real limit and with a small one so the
/// overflow path runs), each line through `ControlRequestParser` and, when it parses,
/// into the params type its method names, as the daemon's dispatcher does. The daemon's
/// answer to a rejected line must itself be a well-formed response line. The same
/// lines also go through `ControlServerMessage.parse`, the client's reader, and through
/// `MessagesSendLine`, the daemon's typed reader of `messages.send`, which must agree with
/// the general route on every line it takes (differential).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONRPC(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []

    // The whole input as one line, however many newlines it has: the parser must be
    // total over any bytes, not only over what LineBuffer lets through.
    handle(line: bytes)

    for maxLineBytes in [ControlLimits.maxLineBytes, smallLineLimit] {
        let expected = referenceLines(bytes, maxLineBytes: maxLineBytes)
        var buffer = LineBuffer(maxLineBytes: maxLineBytes)
        var lines: [[UInt8]] = []
        var overflowed = false
        var offset = 0
        var piece = 0
        repeat {
            // Piece sizes 1...64 from the data itself, as a socket might deliver them.
            let length = bytes.isEmpty ? 0 : min(bytes.count - offset, Int(bytes[piece % bytes.count] & 0x3F) + 1)
            piece += 1
            buffer.append(bytes[offset..<(offset + length)])
            offset += length
            do {
                while let line = try buffer.popLine() { lines.append(line) }
            } catch {
                overflowed = true
            }
        } while offset < bytes.count && !overflowed
        precondition(lines == expected.lines, "LineBuffer split lines differently from the reference")
        precondition(overflowed == expected.overflowed, "LineBuffer overflow disagrees with the reference")
        precondition(buffer.partialLineByteCount <= maxLineBytes)
        if maxLineBytes == smallLineLimit {
            for line in lines { handle(line: line) }
        }
    }
    return 0
}

/// Small enough that fuzzed inputs overflow it often; large enough for real request lines
/// to fit, so the lines that do come out are worth parsing.
private let smallLineLimit = 256

/// What LineBuffer must produce, by the plainest possible means: the complete lines up
/// to the first one longer than the limit; an unterminated tail over the limit overflows too.
private func referenceLines(_ bytes: [UInt8], maxLineBytes: Int) -> (lines: [[UInt8]], overflowed: Bool) {
    var pieces = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    let tail = pieces.removeLast()  // split always yields at least one piece
    var lines: [[UInt8]] = []
    for piece in pieces {
        guard piece.count <= maxLineBytes else { return (lines, true) }
        lines.append(Array(piece))
    }
    return (lines, tail.count > maxLineBytes)
}

private func handle(line: [UInt8]) {
    checkSendFastPath(line)
    switch ControlRequestParser.parse(line: line) {
    case .success(let request):
        decodeParams(of: request)
    case .failure(let error):
        let id = ControlRequestParser.requestID(inRejectedLine: line)
        let response = JSONRPCResponse(id: id, error: error)
        guard let reply = try? ControlJSON.line(response) else {
            preconditionFailure("the answer to a rejected line could not be encoded")
        }
        precondition(
            reply.firstIndex(of: UInt8(ascii: "\n")) == reply.count - 1,
            "a response line contains a raw newline")
        guard case .success(.response(let back)) = ControlServerMessage.parse(line: Array(reply.dropLast())) else {
            preconditionFailure("the answer to a rejected line is not a valid response line")
        }
        precondition(back.id == id && back.error?.code == error.code)
    }
    _ = ControlServerMessage.parse(line: line)
}

private func decodeParams(of request: JSONRPCRequest) {
    switch request.method {
    case ControlMethod.nodeStatus: _ = try? request.decodeParams(NodeStatusParams.self)
    case ControlMethod.filesSend: _ = try? request.decodeParams(FilesSendParams.self)
    case ControlMethod.filesList: _ = try? request.decodeParams(FilesListParams.self)
    case ControlMethod.filesAccept: _ = try? request.decodeParams(FilesAcceptParams.self)
    case ControlMethod.filesReject: _ = try? request.decodeParams(FilesRejectParams.self)
    case ControlMethod.filesCancel: _ = try? request.decodeParams(FilesCancelParams.self)
    case ControlMethod.filesThumbnail: _ = try? request.decodeParams(FilesThumbnailParams.self)
    case ControlMethod.doctorReport: _ = try? request.decodeParams(DoctorReportParams.self)
    case ControlMethod.nodeWhoami: _ = try? request.decodeParams(NodeWhoamiParams.self)
    case ControlMethod.peersList: _ = try? request.decodeParams(PeersListParams.self)
    case ControlMethod.peersConnect: _ = try? request.decodeParams(PeersConnectParams.self)
    case ControlMethod.messagesSend: _ = try? request.decodeParams(MessagesSendParams.self)
    case ControlMethod.messagesList: _ = try? request.decodeParams(MessagesListParams.self)
    case ControlMethod.messagesSubscribe: _ = try? request.decodeParams(MessagesSubscribeParams.self)
    case ControlMethod.trustVerify: _ = try? request.decodeParams(TrustVerifyParams.self)
    case ControlMethod.trustShow: _ = try? request.decodeParams(TrustShowParams.self)
    case ControlMethod.trustReplace: _ = try? request.decodeParams(TrustReplaceParams.self)
    case ControlMethod.trustAccept: _ = try? request.decodeParams(TrustAcceptParams.self)
    case ControlMethod.trustBlock: _ = try? request.decodeParams(TrustBlockParams.self)
    case ControlMethod.trustUnblock: _ = try? request.decodeParams(TrustUnblockParams.self)
    case ControlMethod.trustForget: _ = try? request.decodeParams(TrustForgetParams.self)
    case ControlMethod.peersNickname: _ = try? request.decodeParams(PeersNicknameParams.self)
    default: break
    }
}

/// The daemon reads a plain `messages.send` line with `MessagesSendLine` (no JSON tree) and
/// every other line with the general route: where the fast path takes a line, the general
/// route must read the same id and params, or reject the params with the same error.
private func checkSendFastPath(_ line: [UInt8]) {
    guard let fast = MessagesSendLine.parse(line) else { return }
    guard case .success(let request) = ControlRequestParser.parse(line: line),
        request.method == ControlMethod.messagesSend
    else {
        preconditionFailure("the messages.send fast path took a line the general parser refuses")
    }
    precondition(fast.id == request.id, "the messages.send fast path read another id")
    let general: Result<MessagesSendParams, JSONRPCError>
    do {
        general = .success(try request.decodeParams(MessagesSendParams.self))
    } catch {
        general = .failure(error)
    }
    precondition(fast.params == general, "the messages.send fast path disagrees with the general route")
}
