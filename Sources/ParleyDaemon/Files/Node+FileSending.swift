import NIOCore
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// `files.send` routed to `FileDriver.send` (Drivers/Files/FileDriver+Sending.swift) once
/// the node has resolved who the file is for.
extension Node {
    /// Chunks put on one connection per event-loop turn (`FileDriver.chunksPerTurn`).
    static let fileChunksPerTurn = FileDriver.chunksPerTurn

    /// One file to offer: the daemon's own copy (`OutgoingCopies`) and what to call it.
    typealias StagedFile = StagedOutgoingFile

    /// `files.send` (descriptor socket): checks the recipients now (errors are thrown at
    /// once), then hashes every staged copy and stores and offers one transfer per file and
    /// recipient: all of them, or, if any file fails, none (and every copy is removed).
    func sendFiles(to selector: String, staged: [StagedFile], caption: String?) throws
        -> EventLoopFuture<[FileTransferRecord]>
    {
        loop.preconditionInEventLoop()
        var recipients: [IdentityPublicKey] = []
        var room: RoomID?
        do {
            if selector.hasPrefix("#") {
                let r = try resolveRoom(selector)
                guard r.isMember else { throw RoomError.notMember(r) }
                recipients = r.joined.filter { $0 != myIdentityKey }
                guard !recipients.isEmpty else { throw FileError.noRecipients(selector) }
                room = r.id
            } else {
                let peer = try resolvePeer(selector)
                if let refusal = sendRefusal(peer) { throw refusal }
                if let conn = activeConnection(for: peer.identity), !conn.remoteFeatures.contains(.files) {
                    throw FileError.peerLacksFiles(displayName(of: peer.identity))
                }
                recipients = [peer.identity]
            }
        } catch {
            for file in staged { fileDriver.copies.remove(file.copy) }
            throw error
        }
        return try fileDriver.send(staged, to: recipients, room: room, caption: caption)
    }

    /// `FileDriver.pump`: the next chunks for the peer of `conn`.
    func pumpFiles(_ conn: PeerConnection) { fileDriver.pump(conn) }
}
