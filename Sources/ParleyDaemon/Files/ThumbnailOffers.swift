import NIOCore
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Thumbnails in the node: asking `ThumbnailMaker` for one when the user offers a picture,
/// and `files.thumbnail`, which hands a stored one (ours or a peer's) to a client without
/// decoding it.
extension Node {
    /// The thumbnail for an offer of the user's file at `path` (resolved, outside the state
    /// directory): empty when the file is not a picture the tool reads, too large, or when
    /// anything goes wrong. Never fails: an offer without a thumbnail is still an offer.
    func makeThumbnail(path: String, mediaType: String, size: UInt64) -> EventLoopFuture<[UInt8]> {
        guard ThumbnailPolicy.wants(mediaType: mediaType, size: size) else { return loop.makeSucceededFuture([]) }
        let maker = ThumbnailMaker.shared
        return maker.make(path: path, on: loop).map { outcome in
            if let note = maker.takeAnnouncement() { self.log.info("\(note)") }
            switch outcome {
            case .made(let bytes):
                self.log.debug("thumbnail made", ["bytes": "\(bytes.count)"])
                return bytes
            case .none(let why):
                // Debug level: why a picture had none (tool missing, timeout, bomb) is for
                // whoever debugs; the send goes on either way.
                self.log.debug("no thumbnail for the offer", ["reason": why])
                return []
            }
        }
    }

    /// `files.thumbnail`: the stored thumbnail of a transfer and what its magic numbers say
    /// it is. A peer's thumbnail is hostile bytes: it is never decoded here, and anything
    /// that does not start like a JPEG or PNG is refused rather than handed on to a client.
    func fileThumbnail(_ prefix: String) throws(FileError) -> (id: String, type: ThumbnailImageType, bytes: [UInt8]) {
        let rec = try findTransfer(prefix)
        guard !rec.thumbnail.isEmpty else { throw .noThumbnail(rec.transfer.hex) }
        guard let type = ThumbnailImageType.sniff(rec.thumbnail) else { throw .thumbnailNotImage(rec.transfer.hex) }
        return (rec.transfer.hex, type, rec.thumbnail)
    }
}
