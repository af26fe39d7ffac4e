import ParleyControlProtocol
import ParleyCore
import ParleyStore

extension Node {
    /// A transfer as `files.*` and `file.*` show it (the running state when it is in memory).
    func fileInfo(_ stored: FileTransferRecord, rate: UInt64? = nil) -> FileTransferInfo {
        let (rec, liveRate) = currentRecord(stored)
        let done = min(rec.size, rec.verified * rec.chunkSize)
        return FileTransferInfo(
            id: rec.transfer.hex, direction: rec.direction == .incoming ? "in" : "out",
            peer: Node.fingerprint(of: rec.peer), peerName: displayName(of: rec.peer), room: rec.room?.hex,
            name: rec.name, size: Int(rec.size), mediaType: rec.mediaType,
            caption: rec.caption.isEmpty ? nil : rec.caption,
            state: rec.state.rawValue, bytesDone: Int(rec.state == .completed ? rec.size : done),
            rate: (rate ?? liveRate).map { Int(clamping: $0) }, path: rec.savedPath, error: rec.error,
            contentHash: Sodium.hex(rec.contentHash), createdAt: Int(rec.createdAt), updatedAt: Int(rec.updatedAt),
            thumbnailBytes: rec.thumbnail.isEmpty ? nil : rec.thumbnail.count)
    }
}
