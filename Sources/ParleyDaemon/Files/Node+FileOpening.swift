import Foundation
import ParleyNodeCore
import ParleyStore

/// `files.open` (descriptor socket): a completed incoming file, opened read-only by the
/// daemon from its own download directory and handed to the asking client, which writes
/// it where the person wants with the person's rights (issue 28: under the hardened unit
/// the daemon cannot write into a home, and must not write where a client says).
extension Node {
    func openReceivedFile(_ prefix: String) throws(FileError) -> (FileTransferRecord, Int32, Int) {
        let rec = currentRecord(try findTransfer(prefix)).0
        guard rec.direction == .incoming else {
            throw .wrongState(id: rec.transfer.hex, state: "outgoing", wanted: "an incoming transfer")
        }
        guard rec.state == .completed, let path = rec.savedPath else {
            throw .wrongState(id: rec.transfer.hex, state: rec.state.rawValue, wanted: "completed")
        }
        // After a move of the state directory the record names the old place
        // (`ReceivedFileLocation`); the first candidate that opens is used.
        var fd: Int32 = -1
        var firstErrno: Int32 = 0
        for candidate in ReceivedFileLocation.candidates(recorded: path, downloadDirectory: downloadDirectory) {
            fd = open(candidate, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
            if fd >= 0 { break }
            if firstErrno == 0 { firstErrno = errno }
        }
        guard fd >= 0 else {
            throw .io(
                path: path, operation: "cannot open the received file (was it moved or deleted?)", errno: firstErrno)
        }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, Int64(st.st_size) == rec.size else {
            close(fd)
            throw .notSendable(path: path, reason: "the received file changed on disk since it arrived")
        }
        return (rec, fd, Int(st.st_size))
    }
}
