import Foundation
import ParleyControlProtocol
import ParleyCore
import ParleyStore

/// What can go wrong with a file transfer that a local user caused or must act on, each
/// saying what to do next.
enum FileError: Error, CustomStringConvertible {
    case notFound(String)
    case ambiguous(String, Int)
    case notSendable(path: String, reason: String)
    case tooLarge(path: String, size: UInt64)
    /// The recipient is online and its Parley does not take files (feature bit 1 not announced).
    case peerLacksFiles(String)
    case wrongState(id: String, state: String, wanted: String)
    case noRecipients(String)
    case io(path: String, operation: String, errno: Int32)
    case storage(StoreError)
    /// `download_dir` is not the daemon's own private directory (`DownloadDirectoryCheck`).
    case unsafeDownloadDirectory(String)
    /// `files.thumbnail`: the offer came without a thumbnail.
    case noThumbnail(String)
    /// `files.thumbnail`: the offer's thumbnail (a peer's bytes) is neither JPEG nor PNG.
    case thumbnailNotImage(String)

    var description: String {
        switch self {
        case .notFound(let q): return "no file transfer with id '\(q)' (see `parley files`)"
        case let .ambiguous(q, n): return "'\(q)' is the start of \(n) transfer ids; give more of the id"
        case let .notSendable(path, reason): return "cannot send \(path): \(reason)"
        case let .tooLarge(path, size):
            return
                "cannot send \(path): \(size) bytes is over the \(FileLimits.maxFileBytes >> 30) GiB limit of a transfer"
        case .peerLacksFiles(let name):
            return "\(name)'s Parley does not take files (it is an older version); ask them to update, then send again"
        case let .wrongState(id, state, wanted):
            return "transfer \(id.prefix(8)) is \(state); it must be \(wanted) for this"
        case .noRecipients(let room): return "nobody else in \(room) has joined yet; nothing was sent"
        case let .io(path, operation, e): return "\(operation) \(path): \(String(cString: strerror(e)))"
        case .storage(let e): return e.description
        case .unsafeDownloadDirectory(let why): return why
        case .noThumbnail(let id):
            return "transfer \(id.prefix(8)) has no thumbnail (only pictures the sender's Parley could read have one)"
        case .thumbnailNotImage(let id):
            return "the offer's thumbnail is not a JPEG or PNG (transfer \(id.prefix(8))); it is not shown"
        }
    }

    var rpcError: JSONRPCError {
        switch self {
        case .notFound, .ambiguous, .noThumbnail, .thumbnailNotImage:
            return JSONRPCError(.transferNotFound, description)
        case .notSendable, .tooLarge, .io: return JSONRPCError(.fileNotSendable, description)
        case .peerLacksFiles, .noRecipients: return JSONRPCError(.notPermitted, description)
        case .wrongState: return JSONRPCError(.transferState, description)
        case .storage, .unsafeDownloadDirectory: return JSONRPCError(.storageFailed, description)
        }
    }
}
