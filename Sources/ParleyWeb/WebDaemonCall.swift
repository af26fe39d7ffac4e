import Foundation
import ParleyControlProtocol
import ParleyWebCore

/// The few calls `parley web` makes to the daemon itself rather than relaying the page's:
/// `files.send` for a staged upload, and `files.list` to learn when staged files may go.
/// `ControlClient` blocks, so each call runs on a thread of its own and the server's tasks
/// are never held by it.
enum WebDaemonCall {
    /// Hashing a 1 GiB file before the daemon answers takes seconds on a slow disk.
    static let sendTimeout: Duration = .seconds(120)
    static let listTimeout: Duration = .seconds(5)

    static func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: work()) }.start()
        }
    }

    /// `files.send` of the staged file: the transfers, or why not (the daemon's own words).
    static func send(
        path: String, upload: WebUploadRequest, socketPath: String
    ) async -> Result<[FileTransferInfo], WebUploadError> {
        await onThread {
            do throws(ControlClientError) {
                // Opened here, as the person (`parley web` runs as them), and passed as a
                // descriptor: the daemon keeps its own copy and never opens this path.
                let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
                guard fd >= 0 else {
                    return .failure(
                        .daemonUnavailable("cannot open the staged upload: \(String(cString: strerror(errno)))"))
                }
                defer { close(fd) }
                let name = upload.name
                let (result, extra) = try ControlClient.callPassing(
                    FilesSendParams(to: upload.to, files: [FileAttachment(name: name)], caption: upload.caption),
                    descriptors: [fd], controlPath: socketPath, timeout: sendTimeout)
                DescriptorMessage.closeAll(extra)
                return .success(result.transfers)
            } catch {
                if case .remote(let remote) = error {
                    return .failure(.sendRefused(code: remote.code, message: remote.message))
                }
                return .failure(.daemonUnavailable(error.description))
            }
        }
    }

    /// Each id's state (nil: the daemon does not know it). Ids the daemon could not be
    /// asked about are left out, so their files are kept.
    static func states(of ids: [String], socketPath: String) async -> [String: String?] {
        await onThread {
            var states: [String: String?] = [:]
            guard let client = try? ControlClient.connect(path: socketPath, callTimeout: listTimeout) else {
                return states
            }
            defer { client.close() }
            for id in ids {
                guard let result = try? client.call(FilesListParams(limit: 1, id: id)) else { continue }
                states[id] = .some(result.transfers.first(where: { $0.id == id })?.state)
            }
            return states
        }
    }

    /// `files.open` of a received file: its transfer, its size and a read-only descriptor
    /// the caller owns (and must close); or the daemon's refusal (`remote`) or why it could
    /// not be asked.
    static func openReceived(
        id: String, socketPath: String
    ) async -> Result<(opened: FilesOpenResult, fd: Int32), ControlClientError> {
        await onThread {
            do throws(ControlClientError) {
                let (opened, fds) = try ControlClient.callPassing(
                    FilesOpenParams(id: id), descriptors: [], controlPath: socketPath, timeout: listTimeout)
                guard fds.count == 1, let fd = fds.first else {
                    DescriptorMessage.closeAll(fds)
                    return .failure(.protocolViolation("files.open answered without exactly one descriptor"))
                }
                return .success((opened, fd))
            } catch {
                return .failure(error)
            }
        }
    }
}
