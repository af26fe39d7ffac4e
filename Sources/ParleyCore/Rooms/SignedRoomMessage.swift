/// A room message signed by its author (issue 30; docs/PROTOCOL.md "Room sync"), so that
/// any member can hand it to another and the receiver checks the *author*, not the member
/// that forwarded it. The `roomMessage` record (0x16) carries exactly this encoding.
///
/// Every value is valid: the only ways to get one are `sign` (which checks and signs) and
/// `decode` (which checks every field and the signature).
///
/// Layout, no padding (all integers big-endian):
/// `version: u8 (1) || kind: u8 || room[16] || author[32] || roomSequence: u64 || id[16] ||
///  createdAt: u64 || anchorCount: u8 (1...16) || anchor[32] × anchorCount ||
///  (reply only: replyTo[16]) || (edit, delete, reaction: target[16]) ||
///  (reaction only: added: u8) || body || signature[64]`
/// signed as Ed25519(author, `"parley-room-msg-v1\0"` || every byte before the signature)
/// for a chat or reply, and with `"parley-room-change-v1\0"` instead for an edit, delete or
/// reaction (a change signature can never pass for a message signature, nor the reverse).
/// A change's `body` is the new text (edit), empty (delete) or the reaction text.
public struct SignedRoomMessage: Equatable, Sendable {
    /// Prefix of the signed bytes: a room-message signature can never be taken for a card,
    /// a room operation or an address record signed by the same identity key, nor the
    /// reverse (none of those prefixes starts with this one, nor this one with them).
    public static let signatureDomain: [UInt8] = Array("parley-room-msg-v1\0".utf8)
    /// The same for edits, deletions and reactions: distinct, so a change and a message can
    /// never be taken for each other.
    public static let changeSignatureDomain: [UInt8] = Array("parley-room-change-v1\0".utf8)
    public static let currentVersion: UInt8 = 1
    public static let signatureLength = 64
    /// version, kind, room, author, roomSequence, id, createdAt, anchorCount.
    public static let fixedLength = 1 + 1 + RoomID.length + IdentityPublicKey.length + 8 + MessageID.length + 8 + 1
    /// The heads an author names are the room's operation heads, like an operation's
    /// parents, and bounded the same way (`RoomLimits.maxParents`).
    public static let maxAnchors = RoomLimits.maxParents
    /// A body is a chat body (`WireLimits.maxBodyBytes`); the whole encoding then stays
    /// well inside one record (`WireLimits.maxRecordBytes`).
    public static let maxEncodedLength =
        fixedLength + maxAnchors * RoomOperationHash.length + MessageID.length + 1 + WireLimits.maxBodyBytes
        + signatureLength

    /// What the message is: a message of the room, or a change of one (its author's edit or
    /// deletion, anyone's reaction), signed the same way so any member can pass it on.
    public enum Kind: UInt8, Sendable {
        case chat = 1
        case reply = 2
        case edit = 3
        case delete = 4
        case reaction = 5

        public var isChange: Bool { rawValue >= 3 }
    }

    public let kind: Kind
    public let roomID: RoomID
    public let author: IdentityPublicKey
    /// The author's counter for this room: 1, 2, 3, ... without gaps. What sync compares.
    public let roomSequence: UInt64
    public let id: MessageID
    /// The author's clock, Unix milliseconds; informational only.
    public let createdAt: UInt64
    /// The room's operation heads in the author's view when it wrote: the message's place
    /// in the room's history, which decides who is entitled to it. Strictly ascending.
    public let anchor: [RoomOperationHash]
    /// The room message this one answers (kind `reply` only).
    public let replyTo: MessageID?
    /// The room message a change changes (edit, delete, reaction).
    public let target: MessageID?
    /// A reaction added (true) or withdrawn (false); nil for every other kind.
    public let added: Bool?
    public let body: String
    public let signature: [UInt8]

    /// The change as a conversation action (nil for a chat or reply).
    public var action: MessageActionRecord.Action? {
        switch kind {
        case .chat, .reply: return nil
        case .edit: return .edit(body: body)
        case .delete: return .delete
        case .reaction: return (try? Reaction(body)).map { .reaction($0, added: added ?? true) }
        }
    }

    private init(
        kind: Kind, roomID: RoomID, author: IdentityPublicKey, roomSequence: UInt64, id: MessageID,
        createdAt: UInt64, anchor: [RoomOperationHash], replyTo: MessageID?, target: MessageID? = nil,
        added: Bool? = nil, body: String, signature: [UInt8]
    ) {
        self.kind = kind
        self.roomID = roomID
        self.author = author
        self.roomSequence = roomSequence
        self.id = id
        self.createdAt = createdAt
        self.anchor = anchor
        self.replyTo = replyTo
        self.target = target
        self.added = added
        self.body = body
        self.signature = signature
    }

    /// Signs a change of the room message `target`: an edit or deletion of one of the
    /// author's own messages, or a reaction (the receiver checks who may do what).
    public static func signChange(
        _ action: MessageActionRecord.Action, of target: MessageID, roomID: RoomID, roomSequence: UInt64,
        id: MessageID, createdAt: UInt64, anchor: [RoomOperationHash], by identity: IdentityKeyPair
    ) throws(SignedRoomMessageError) -> SignedRoomMessage {
        let heads = Array(Set(anchor)).sorted()
        let (kind, body, added): (Kind, String, Bool?)
        switch action {
        case .edit(let text): (kind, body, added) = (.edit, text, nil)
        case .delete: (kind, body, added) = (.delete, "", nil)
        case let .reaction(r, a): (kind, body, added) = (.reaction, r.text, a)
        }
        try validate(roomSequence: roomSequence, anchor: heads, bodyBytes: body.utf8.count)
        let signed = signedBytes(
            kind: kind, roomID: roomID, author: identity.publicKey, roomSequence: roomSequence, id: id,
            createdAt: createdAt, anchor: heads, replyTo: nil, target: target, added: added, body: body)
        return SignedRoomMessage(
            kind: kind, roomID: roomID, author: identity.publicKey, roomSequence: roomSequence, id: id,
            createdAt: createdAt, anchor: heads, replyTo: nil, target: target, added: added, body: body,
            signature: identity.sign(changeSignatureDomain + signed))
    }

    /// Signs a new message. `anchor` is the room's heads in this node's view (any order,
    /// duplicates removed here).
    public static func sign(
        roomID: RoomID, roomSequence: UInt64, id: MessageID, createdAt: UInt64,
        anchor: [RoomOperationHash], replyTo: MessageID? = nil, body: String, by identity: IdentityKeyPair
    ) throws(SignedRoomMessageError) -> SignedRoomMessage {
        let heads = Array(Set(anchor)).sorted()
        try validate(roomSequence: roomSequence, anchor: heads, bodyBytes: body.utf8.count)
        let kind: Kind = replyTo == nil ? .chat : .reply
        let signed = signedBytes(
            kind: kind, roomID: roomID, author: identity.publicKey, roomSequence: roomSequence, id: id,
            createdAt: createdAt, anchor: heads, replyTo: replyTo, body: body)
        return SignedRoomMessage(
            kind: kind, roomID: roomID, author: identity.publicKey, roomSequence: roomSequence, id: id,
            createdAt: createdAt, anchor: heads, replyTo: replyTo, body: body,
            signature: identity.sign(signatureDomain + signed))
    }

    private static func validate(roomSequence: UInt64, anchor: [RoomOperationHash], bodyBytes: Int)
        throws(SignedRoomMessageError)
    {
        guard roomSequence >= 1 else { throw .invalidSequence }
        guard (1...maxAnchors).contains(anchor.count) else {
            throw .invalidAnchor("\(anchor.count) anchor hashes; a message names 1 to \(maxAnchors)")
        }
        guard zip(anchor, anchor.dropFirst()).allSatisfy({ $0 < $1 }) else {
            throw .invalidAnchor("anchor hashes must be strictly ascending")
        }
        guard bodyBytes <= WireLimits.maxBodyBytes else { throw .bodyTooLarge(bodyBytes) }
    }

    static func signedBytes(
        kind: Kind, roomID: RoomID, author: IdentityPublicKey, roomSequence: UInt64, id: MessageID,
        createdAt: UInt64, anchor: [RoomOperationHash], replyTo: MessageID?, target: MessageID? = nil,
        added: Bool? = nil, body: String
    ) -> [UInt8] {
        var b: [UInt8] = [currentVersion, kind.rawValue]
        b.reserveCapacity(fixedLength + anchor.count * RoomOperationHash.length + body.utf8.count + 16)
        b += roomID.bytes
        b += author.bytes
        b.appendUInt64(roomSequence)
        b += id.bytes
        b.appendUInt64(createdAt)
        b.append(UInt8(anchor.count))
        for h in anchor { b += h.bytes }
        if let replyTo { b += replyTo.bytes }
        if let target { b += target.bytes }
        if let added { b.append(added ? 1 : 0) }
        b += Array(body.utf8)
        return b
    }

    /// The canonical wire form: signed bytes, then the signature.
    public func encoded() -> [UInt8] {
        Self.signedBytes(
            kind: kind, roomID: roomID, author: author, roomSequence: roomSequence, id: id, createdAt: createdAt,
            anchor: anchor, replyTo: replyTo, target: target, added: added, body: body) + signature
    }

    /// Parses and verifies one message: exactly these bytes, a valid structure and a
    /// signature by `author`. Whoever handed the bytes over plays no part.
    public static func decode(_ bytes: ArraySlice<UInt8>) throws(SignedRoomMessageError) -> SignedRoomMessage {
        guard bytes.count <= maxEncodedLength else { throw .tooLarge(bytes.count) }
        var r = ByteReader(bytes)
        func take(_ n: Int, _ field: String) throws(SignedRoomMessageError) -> [UInt8] {
            do { return try r.readBytes(n) } catch { throw .truncated(field: field) }
        }
        func u64(_ field: String) throws(SignedRoomMessageError) -> UInt64 {
            try take(8, field).reduce(UInt64(0)) { ($0 << 8) | UInt64($1) }
        }
        let version = try take(1, "version")[0]
        guard version == currentVersion else { throw .unsupportedVersion(version) }
        let rawKind = try take(1, "kind")[0]
        guard let kind = Kind(rawValue: rawKind) else { throw .unknownKind(rawKind) }
        let roomID = RoomID(exactly: try take(RoomID.length, "room"))
        let authorBytes = try take(IdentityPublicKey.length, "author")
        // Force-try safe: `take` returned exactly the key length, the only thing checked.
        let author = try! IdentityPublicKey(bytes: authorBytes)
        let roomSequence = try u64("room sequence")
        let id = MessageID(exactly: try take(MessageID.length, "id"))
        let createdAt = try u64("created-at")
        let anchorCount = Int(try take(1, "anchor count")[0])
        guard anchorCount <= maxAnchors else {
            throw .invalidAnchor("\(anchorCount) anchor hashes exceed \(maxAnchors)")
        }
        var anchor: [RoomOperationHash] = []
        for _ in 0..<anchorCount {
            anchor.append(RoomOperationHash(exactly: try take(RoomOperationHash.length, "anchor")))
        }
        let replyTo = kind == .reply ? MessageID(exactly: try take(MessageID.length, "reply-to")) : nil
        let target = kind.isChange ? MessageID(exactly: try take(MessageID.length, "target")) : nil
        var added: Bool?
        if kind == .reaction {
            let a = try take(1, "added")[0]
            guard a <= 1 else { throw .invalidChange("reaction added byte \(a) is not 0 or 1") }
            added = a == 1
        }
        guard r.remaining >= signatureLength else { throw .truncated(field: "signature") }
        let bodyBytes = try take(r.remaining - signatureLength, "body")
        try validate(roomSequence: roomSequence, anchor: anchor, bodyBytes: bodyBytes.count)
        guard let body = String(validating: bodyBytes, as: UTF8.self) else { throw .invalidUTF8 }
        if kind == .delete, !body.isEmpty { throw .invalidChange("a delete carries no text") }
        if kind == .reaction, (try? Reaction(body)) == nil { throw .invalidChange("not a valid reaction text") }
        let signedEnd = r.offset
        let signature = try take(signatureLength, "signature")
        let domain = kind.isChange ? changeSignatureDomain : signatureDomain
        guard author.verify(signature: signature, message: domain + bytes.prefix(signedEnd)) else {
            throw .badSignature(roomID: roomID, author: author, id: id)
        }
        return SignedRoomMessage(
            kind: kind, roomID: roomID, author: author, roomSequence: roomSequence, id: id, createdAt: createdAt,
            anchor: anchor, replyTo: replyTo, target: target, added: added, body: body, signature: signature)
    }

    public static func decode(_ bytes: [UInt8]) throws(SignedRoomMessageError) -> SignedRoomMessage {
        try decode(bytes[...])
    }
}

public enum SignedRoomMessageError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooLarge(Int)
    case truncated(field: String)
    case unsupportedVersion(UInt8)
    case unknownKind(UInt8)
    case invalidSequence
    case invalidAnchor(String)
    case bodyTooLarge(Int)
    case invalidUTF8
    /// A change that breaks its kind's rules (a delete with text, a bad reaction).
    case invalidChange(String)
    /// Well formed, but the signature is not the author's: forged or altered by whoever
    /// handed it over. Carries what the receiver logs.
    case badSignature(roomID: RoomID, author: IdentityPublicKey, id: MessageID)

    public var description: String {
        switch self {
        case .tooLarge(let n): "room message of \(n) bytes exceeds \(SignedRoomMessage.maxEncodedLength)"
        case .truncated(let field): "room message truncated in \(field)"
        case .unsupportedVersion(let v): "room message version \(v) is not supported (expected 1)"
        case .unknownKind(let k): "room message kind \(k) is unknown"
        case .invalidSequence: "room message sequence must be at least 1"
        case .invalidAnchor(let why): "room message anchor: \(why)"
        case .bodyTooLarge(let n): "room message body of \(n) bytes exceeds \(WireLimits.maxBodyBytes)"
        case .invalidUTF8: "room message body is not valid UTF-8"
        case .invalidChange(let why): "room change: \(why)"
        case let .badSignature(room, author, id):
            "room message \(id.hex) in room \(room.hex) does not carry a valid signature by its author "
                + Fingerprint(author).description
        }
    }
}

/// A `roomMessage` record as it arrived. A signature that does not verify is not a protocol
/// error: the forwarder (not the author) may be at fault, and one bad message must not cost
/// the session and everything else it carries. The receiver drops it, unacknowledged.
public enum RoomMessageArrival: Equatable, Sendable {
    case verified(SignedRoomMessage)
    case badSignature(roomID: RoomID, author: IdentityPublicKey, id: MessageID)
}
