import ParleyCore

/// The receiver's side of one file transfer (docs/PROTOCOL.md "Files"): records in,
/// actions out. Pure: the driver does the writes, the fsyncs and the store, and tells it
/// when a checkpoint is durable. Chunks are taken strictly in order; each is checked
/// against the verified hash list before it is written.
public struct IncomingTransfer: Sendable {
    public enum Action: Equatable, Sendable {
        /// Send `fileWant` (accept, resume or re-fetch).
        case want(from: UInt64, needList: Bool)
        /// The verified hash list is complete: keep it (the store), so a resume needs no list.
        case keepHashList([[UInt8]])
        /// Write `data` at byte `offset` of the partial file.
        case write(offset: UInt64, data: [UInt8])
        /// Make the partial file durable up to `verified` chunks, record that, send `fileHave`;
        /// then call `checkpointed(verified)`.
        case checkpoint(verified: UInt64)
        /// Every chunk is in: make the file durable, compare the whole-file hash, move it into
        /// place, send `fileEnd` completed (or failed on a mismatch).
        case finish
        /// The transfer cannot go on: send `fileEnd` failed with this reason, delete the partial file.
        case fail(String)
    }

    public let offer: FileOffer
    /// The chunk hashes: verified against `listHash` once `listVerified`.
    public private(set) var hashes: [[UInt8]]
    public private(set) var listVerified: Bool
    /// The next chunk expected: every chunk before it is verified and written.
    public private(set) var nextIndex: UInt64
    /// Chunks known durable (fsynced and recorded).
    public private(set) var durable: UInt64
    public private(set) var corruptChunks = 0
    /// The last checkpoint asked for (not yet confirmed, perhaps): the next one is due
    /// `checkpointChunks` after it, not after every chunk while the driver is busy.
    private var checkpointAsked: UInt64 = 0
    /// True once `finish` or `fail` was returned: later records change nothing.
    public private(set) var isOver = false

    /// `durable`: what the store recorded (0 for a new transfer); `hashes`: the list the
    /// store kept, already verified, if any.
    public init(offer: FileOffer, durable: UInt64 = 0, verifiedHashes: [[UInt8]]? = nil) {
        self.offer = offer
        let count = offer.chunkCount
        if let v = verifiedHashes, UInt64(v.count) == count, FileHash.listHash(v) == offer.listHash {
            hashes = v
            listVerified = true
        } else {
            hashes = []
            listVerified = count == 0 && FileHash.listHash([]) == offer.listHash
        }
        self.durable = min(durable, count)
        self.nextIndex = self.durable
    }

    public var chunkCount: UInt64 { offer.chunkCount }

    /// Bytes verified so far (for progress).
    public var verifiedBytes: UInt64 { min(offer.size, nextIndex * UInt64(offer.chunkSize)) }

    /// At accept, and at each new session: ask for the chunks from the durable point (what
    /// was written after it may not be on the disk).
    public mutating func start() -> [Action] {
        guard !isOver else { return [] }
        nextIndex = durable
        checkpointAsked = durable
        if listVerified && nextIndex == chunkCount {
            isOver = true
            return [.finish]
        }
        if !listVerified { hashes = [] }
        return [.want(from: nextIndex, needList: !listVerified)]
    }

    public mutating func receivedHashes(first: UInt64, _ list: [[UInt8]]) -> [Action] {
        guard !isOver, !listVerified else { return [] }
        // The list arrives in order from 0; anything else is a sender that does not follow
        // the protocol, or a list from before our latest want: start the list again.
        guard first == UInt64(hashes.count), first + UInt64(list.count) <= chunkCount else {
            return fail("the sender's hash list does not fit the offer")
        }
        hashes.append(contentsOf: list)
        guard UInt64(hashes.count) == chunkCount else { return [] }
        guard FileHash.listHash(hashes) == offer.listHash else {
            return fail("the sender's hash list does not match its offer")
        }
        listVerified = true
        var actions: [Action] = [.keepHashList(hashes)]
        if nextIndex == chunkCount {
            isOver = true
            actions.append(.finish)
        }
        return actions
    }

    /// A chunk record. Returns nil if the record breaks the protocol (a wrong length for its
    /// index, an index past the end): the driver closes the session with `protocolError`.
    public mutating func receivedChunk(index: UInt64, data: [UInt8]) -> [Action]? {
        guard index < chunkCount, data.count == offer.chunkLength(index) else { return nil }
        guard !isOver, listVerified, index == nextIndex else { return [] }  // stale or duplicate: dropped
        guard FileHash.of(data) == hashes[Int(index)] else {
            corruptChunks += 1
            if corruptChunks >= FileLimits.maxCorruptChunks { return fail("the sender sent corrupted data") }
            return [.want(from: index, needList: false)]
        }
        var actions: [Action] = [.write(offset: index * UInt64(offer.chunkSize), data: data)]
        nextIndex = index + 1
        if nextIndex == chunkCount {
            isOver = true
            actions.append(.finish)
        } else if nextIndex - max(durable, checkpointAsked) >= FileLimits.checkpointChunks {
            checkpointAsked = nextIndex
            actions.append(.checkpoint(verified: nextIndex))
        }
        return actions
    }

    /// The driver made `verified` chunks durable and recorded them.
    public mutating func checkpointed(_ verified: UInt64) {
        durable = max(durable, min(verified, nextIndex))
    }

    /// Ended from outside (cancel, reject, the sender's end): nothing more is taken.
    public mutating func end() { isOver = true }

    private mutating func fail(_ reason: String) -> [Action] {
        isOver = true
        return [.fail(reason)]
    }
}
