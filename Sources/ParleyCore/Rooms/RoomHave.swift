/// What a node holds of a room's signed messages, per author, as sequence ranges: the
/// summary two members exchange so each pushes only what the other lacks (issue 30;
/// docs/PROTOCOL.md "Room sync"). The `roomHave` record (0x17) carries this encoding:
///
/// `room[16] || authorCount: u16be || per author, strictly ascending by key:
///  author[32] || rangeCount: u8 (1...4) || (first: u64be || last: u64be) × rangeCount`
///
/// Ranges of one author are ascending, `1 <= first <= last`, and neither overlap nor touch
/// (`first > previous last + 1`): there is exactly one encoding of a set.
public struct RoomHave: Equatable, Sendable {
    /// Ranges listed per author. A node almost always holds one range (`1...n`); holes only
    /// while sync fills them, and a few suffice to say "I have these, send the rest". A node
    /// that holds more lists its lowest four: the other side then pushes some it already
    /// has, which it de-duplicates (never the reverse: a summary never claims too much).
    public static let maxRangesPerAuthor = 4
    /// Authors in one summary: with four ranges each (97 bytes) it still fits in one record
    /// (`WireLimits.maxRecordBytes`), and it is above the members a room holds
    /// (`RoomLimits.maxMembers`, 1,000) plus some who left after writing. Past it, the
    /// authors last in key order are left out: the other side then pushes their messages
    /// even if held (de-duplicated), never the reverse.
    public static let maxAuthors = 1_024
    public static let maxEncodedLength =
        RoomID.length + 2 + maxAuthors * (IdentityPublicKey.length + 1 + maxRangesPerAuthor * 16)

    public let roomID: RoomID
    /// Authors with at least one number held; each `SequenceRanges` has 1 ... 4 ranges.
    public let authors: [IdentityPublicKey: SequenceRanges]

    /// Trims each author to its lowest `maxRangesPerAuthor` ranges and drops the authors
    /// above `maxAuthors` (by key order); empty ranges are left out.
    public init(roomID: RoomID, holding: [IdentityPublicKey: SequenceRanges]) {
        self.roomID = roomID
        var kept: [IdentityPublicKey: SequenceRanges] = [:]
        for (k, r) in holding.filter({ !$0.value.isEmpty }).sorted(by: {
            $0.key.bytes.lexicographicallyPrecedes($1.key.bytes)
        })
        .prefix(Self.maxAuthors) {
            kept[k] = r.prefix(Self.maxRangesPerAuthor)
        }
        self.authors = kept
    }

    public func encoded() -> [UInt8] {
        var b = roomID.bytes
        let sorted = authors.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
        b.appendUInt16(UInt16(sorted.count))
        for (k, r) in sorted {
            b += k.bytes
            b.append(UInt8(r.ranges.count))
            for x in r.ranges {
                b.appendUInt64(x.lowerBound)
                b.appendUInt64(x.upperBound)
            }
        }
        return b
    }

    public static func decode(_ bytes: ArraySlice<UInt8>) throws(RoomHaveError) -> RoomHave {
        guard bytes.count <= maxEncodedLength else { throw .malformed("\(bytes.count) bytes is too long") }
        var r = ByteReader(bytes)
        do {
            let room = RoomID(exactly: try r.readBytes(RoomID.length))
            let count = Int(try r.readUInt16())
            guard count <= maxAuthors else { throw RoomHaveError.malformed("\(count) authors exceed \(maxAuthors)") }
            var authors: [IdentityPublicKey: SequenceRanges] = [:]
            var previous: IdentityPublicKey?
            for _ in 0..<count {
                let keyBytes = try r.readBytes(IdentityPublicKey.length)
                // Force-try safe: exactly the key length was read.
                let key = try! IdentityPublicKey(bytes: keyBytes)
                if let previous, !previous.bytes.lexicographicallyPrecedes(key.bytes) {
                    throw RoomHaveError.malformed("authors must be strictly ascending")
                }
                previous = key
                let n = Int(try r.readUInt8())
                guard (1...maxRangesPerAuthor).contains(n) else {
                    throw RoomHaveError.malformed("\(n) ranges; an author has 1 to \(maxRangesPerAuthor)")
                }
                var list: [ClosedRange<UInt64>] = []
                for _ in 0..<n {
                    let first = try r.readUInt64()
                    let last = try r.readUInt64()
                    guard first >= 1, first <= last else {
                        throw RoomHaveError.malformed("range \(first)...\(last) is not 1 <= first <= last")
                    }
                    if let p = list.last, first <= p.upperBound || first - p.upperBound < 2 {
                        throw RoomHaveError.malformed("ranges must be ascending, neither overlapping nor touching")
                    }
                    list.append(first...last)
                }
                authors[key] = SequenceRanges(list)
            }
            guard r.isAtEnd else { throw RoomHaveError.malformed("\(r.remaining) bytes after the last author") }
            return RoomHave(roomID: room, decoded: authors)
        } catch let e as RoomHaveError {
            throw e
        } catch {
            throw .malformed("truncated")
        }
    }

    private init(roomID: RoomID, decoded: [IdentityPublicKey: SequenceRanges]) {
        self.roomID = roomID
        self.authors = decoded
    }
}

public enum RoomHaveError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    public var description: String {
        switch self {
        case .malformed(let why): "roomHave: \(why)"
        }
    }
}
