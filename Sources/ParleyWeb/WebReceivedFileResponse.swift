import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ParleyControlProtocol
import ParleyWebCore

/// `GET /files/ID` (docs/WEB.md "Files"): the received file, read from the descriptor the
/// daemon hands over with `files.open` (`parley web` runs as the person and never opens a
/// path in the daemon's state), streamed to the page with the headers `WebReceivedFile`
/// decides: the type from the bytes' magic number, an attachment, `nosniff`, a sandboxing
/// CSP. The guard (`WebRequestGuard`) has already checked the page's key.
extension WebServer {
    func receivedFile(id: String) async -> Response {
        let admitted = state.withLockedValue { state -> Bool in
            guard state.fileResponses < WebLimits.maxConcurrentFileResponses else { return false }
            state.fileResponses += 1
            return true
        }
        guard admitted else { return refusal(.tooManyFileResponses) }
        let slot = FileResponseSlot(server: self)
        let opened: FilesOpenResult
        let file: OwnedDescriptor
        switch await WebDaemonCall.openReceived(id: id, socketPath: options.controlSocketPath) {
        case .failure(.remote(let error)):
            // Unknown, not received (yet), or changed on disk: the daemon's own words.
            return plain(status: 404, error.message)
        case .failure(let error):
            return plain(status: 502, "cannot reach parleyd: \(error.description)")
        case .success(let answer):
            opened = answer.opened
            file = OwnedDescriptor(answer.fd)
        }
        var prefix = [UInt8](repeating: 0, count: WebRasterType.magicLength)
        let got = prefix.withUnsafeMutableBytes { pread(file.fd, $0.baseAddress, $0.count, 0) }
        prefix = Array(prefix.prefix(max(got, 0)))
        var headers = HTTPFields()
        for header in WebReceivedFile.headers(name: opened.transfer.name, prefix: prefix) {
            if let name = HTTPField.Name(header.name) { headers[name] = header.value }
        }
        let size = opened.size
        headers[.contentLength] = String(size)
        // The descriptor and the slot go when the body is done or dropped (a client that
        // went away before it was written).
        let body = ResponseBody(contentLength: size) { writer in
            _ = slot
            var offset = 0
            var buffer = ByteBufferAllocator().buffer(capacity: WebLimits.fileResponseChunkBytes)
            while offset < size {
                buffer.clear()
                let want = min(WebLimits.fileResponseChunkBytes, size - offset)
                let n = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { raw in
                    max(pread(file.fd, raw.baseAddress, want, off_t(offset)), 0)
                }
                // The daemon's copy shrank under us: end the response short, so the
                // browser sees a broken download instead of a file padded with nothing.
                guard n > 0 else { throw FileResponseError.fileShrank }
                offset += n
                try await writer.write(buffer)
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    func plain(status: Int, _ message: String) -> Response {
        var headers = Self.baseHeaders()
        headers[.contentType] = "text/plain; charset=utf-8"
        return Response(
            status: HTTPResponse.Status(code: status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(string: message + "\n")))
    }
}

enum FileResponseError: Error { case fileShrank }

/// A descriptor closed when the last reference goes.
final class OwnedDescriptor: Sendable {
    let fd: Int32
    init(_ fd: Int32) { self.fd = fd }
    deinit { close(fd) }
}

/// One of `WebLimits.maxConcurrentFileResponses`, given back when the last reference goes.
final class FileResponseSlot: Sendable {
    let server: WebServer
    init(server: WebServer) { self.server = server }
    deinit { server.state.withLockedValue { $0.fileResponses -= 1 } }
}
