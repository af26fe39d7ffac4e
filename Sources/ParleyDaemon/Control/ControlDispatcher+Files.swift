import Foundation
import ParleyControlProtocol
import ParleyCore
import ParleyStore

/// File transfers on the control socket: `files.list`, `files.accept`, `files.reject`,
/// `files.cancel`, `files.thumbnail` (`files.send` and `files.open` need the descriptor
/// socket, `DescriptorServer`).
extension ControlDispatcher {
    func filesList(_ p: FilesListParams, id: JSONRPCID?) throws -> Reply {
        let records: [FileTransferRecord]
        let limit = p.limit ?? 50
        do {
            if let prefix = p.id {
                records = try node.store.transfers(idPrefix: prefix, limit: limit)
            } else {
                records = try node.store.recentTransfers(limit: limit)
            }
        } catch { throw ControlFailure.storeRead(what: "the file transfers", error) }
        return .typed(
            id: id,
            result: FilesListResult(transfers: records.map { node.fileInfo($0) }, directory: node.downloadDirectory))
    }

    /// The answer of `files.accept`, `files.reject` and `files.cancel`: the transfer as it
    /// is now.
    func fileChanged(id: JSONRPCID?, _ transfer: @autoclosure () throws -> FileTransferRecord) throws -> Reply {
        .typed(id: id, result: FileTransferResult(transfer: node.fileInfo(try transfer())))
    }

    func filesThumbnail(_ p: FilesThumbnailParams, id: JSONRPCID?) throws -> Reply {
        let t = try node.fileThumbnail(p.id)
        return .typed(
            id: id,
            result: FilesThumbnailResult(
                id: t.id, mediaType: t.type.mediaType, data: Data(t.bytes).base64EncodedString()))
    }
}
