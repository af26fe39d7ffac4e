/// The application layer inside a Noise session: typed, versioned records.
///
/// Records are concatenated into one plaintext byte stream which is cut into Noise
/// transport messages (see `RecordStreamEncoder`). Many small records share one
/// message (one AEAD call, one syscall) and one large record may span several.
///
/// Record layout: `type: u8 | length: u32 big-endian | payload[length]`.
public enum AppRecord: Equatable, Sendable {
    /// A chat message from the session's remote identity to the local one.
    case chat(ChatRecord)
    /// The receiver has stored these messages durably (ids of chat records).
    case ack([MessageID])
    /// The sender re-issued its card (for example a new Noise static key).
    case cardUpdate([UInt8])
    case ping(UInt64)
    case pong(UInt64)
    /// Orderly goodbye; the connection is closed right after.
    case close(CloseReason, String)
    /// The receiver's user has read these messages (ids of chat records the session's
    /// local side sent). Same layout as `ack`.
    case readReceipt([MessageID])
    /// A signed change to a room's membership (create, add, remove), sent to every member
    /// and forwarded by them. Acknowledged by the first 16 bytes of its hash.
    case roomOperation(RoomOperation)
    /// A chat message addressed to a room, from the session's remote identity.
    case roomChat(RoomChatRecord)
    /// The receiver did not store these chats (ids of chat records the session's local
    /// side sent), for the reason given: they stay queued at the sender
    /// (docs/PROTOCOL.md "refused"). Layout: `reason: u8 || count: u16be || id[16] × count`.
    case refused(RefusalReason, [MessageID])
    /// An edit, delete-for-everyone or reaction by the session's remote identity (types
    /// 0x0A-0x0C, in a room 0x13-0x15). Sent only to peers whose handshake announced
    /// `ProtocolFeatures.conversation`.
    case messageAction(MessageActionRecord)
    /// The sender's status line (0x0D), sent at the start of a session and on change.
    case status(PresenceStatus)
    /// The TCP ports the sender listens on (1...`WireLimits.maxListenPorts`, none 0): the
    /// receiver dials the address it sees the session come from at these ports when it
    /// needs a session again (after either side restarts), without mDNS.
    case listenPorts([UInt16])
    /// A file record (0x30-0x35, docs/PROTOCOL.md "Files"). Sent only to peers whose
    /// handshake announced `ProtocolFeatures.files`.
    case file(FileRecord)
    /// Where a node can be reached, signed by that node (0x21): its own, or a contact's
    /// relayed by gossip. Optional: `ProtocolFeatures.addressGossip`.
    case addressRecord(SignedAddressRecord)
    /// The identities the sender already knows, blinded (0x22): what it may be told about.
    case contactTags(ContactTags)
    /// `parley doctor`'s reachability probe (0x23) and its answer (0x24).
    case dialBackRequest(DialBackRequest)
    case dialBackResult(DialBackResult)
    /// A room message signed by its author (0x16), from the author or passed on by any
    /// member. Optional: `ProtocolFeatures.roomSync` (docs/PROTOCOL.md "Room sync").
    case roomMessage(RoomMessageArrival)
    /// What the sender holds of a room's signed messages (0x17). Optional: `roomSync`.
    case roomHave(RoomHave)
    /// A member's signed card passed on through a room (0x18). Optional:
    /// `ProtocolFeatures.roomCards` (docs/PROTOCOL.md "Room cards").
    case roomCard(RoomCardRecord)
    /// The heads of a room's operation graph the sender holds (0x19). Optional:
    /// `ProtocolFeatures.roomOperationSummaries` (docs/PROTOCOL.md "Operation summaries").
    case roomOpsHave(RoomOperationsHave)
    /// A record type this version does not know: skipped, for forward compatibility.
    case unknown(type: UInt8, length: Int)

    public enum RecordType: UInt8, Sendable {
        case chat = 0x01, ack = 0x02, cardUpdate = 0x03, ping = 0x04, pong = 0x05, close = 0x06
        case refused = 0x07, readReceipt = 0x08
        /// A chat that quotes an earlier message: decoded as `chat` with `replyTo` set.
        case reply = 0x09
        case edit = 0x0A, delete = 0x0B, reaction = 0x0C, status = 0x0D
        case roomOperation = 0x10, roomChat = 0x11
        /// A room chat that quotes an earlier room message: decoded as `roomChat` with `replyTo`.
        case roomReply = 0x12
        /// Edit, delete and reaction of a room message: the room id, then the direct layout.
        case roomEdit = 0x13, roomDelete = 0x14, roomReaction = 0x15
        /// Room sync (issue 30): signed room messages and the holders' summaries.
        case roomMessage = 0x16, roomHave = 0x17
        /// Room cards (issue 30): members' cards passed on with a room's operations.
        case roomCard = 0x18
        /// Operation summaries (issue 30): operations spread by fan-out, gaps filled by these.
        case roomOpsHave = 0x19
        case listenPorts = 0x20
        case fileOffer = 0x30, fileWant = 0x31, fileHashes = 0x32, fileChunk = 0x33, fileHave = 0x34
        case fileEnd = 0x35
        /// Address gossip and the dial-back probe (issue 19; 0x25-0x2F reserved for it).
        case addressRecord = 0x21, contactTags = 0x22, dialBackRequest = 0x23, dialBackResult = 0x24
    }

    public static let headerLength = 5

    /// Record types no version of the protocol will ever assign (docs/PROTOCOL.md "Record
    /// types"): for tests and experiments. A receiver skips them like any unknown type,
    /// whatever the peer announced; nothing here sends them.
    public static let reservedForExperiments: ClosedRange<UInt8> = 0xF0...0xFF
}

/// 16 random bytes chosen by the sender: globally unique without coordination.
public struct MessageID: FixedLengthID {
    public static let length = 16
    public let bytes: [UInt8]

    public func hash(into hasher: inout Hasher) { hashFixedLengthBytes(bytes, into: &hasher) }

    public init(exactly bytes: [UInt8]) {
        precondition(bytes.count == Self.length, "MessageID must be \(Self.length) bytes")
        self.bytes = bytes
    }

    public static func random() -> MessageID { MessageID(exactly: Sodium.randomBytes(length)) }
}

public struct ChatRecord: Equatable, Sendable {
    public var id: MessageID
    /// Per-sender sequence number: lets the receiver show messages in sender order.
    public var sequence: UInt64
    /// Sender's clock, unix milliseconds (informational only: ordering uses `sequence`).
    public var createdAt: UInt64
    public var body: String
    /// The message this one answers (quotes), in the same conversation; nil for an
    /// ordinary chat. Sent as a `reply` record (0x09) when set.
    public var replyTo: MessageID?

    public init(id: MessageID, sequence: UInt64, createdAt: UInt64, body: String, replyTo: MessageID? = nil) {
        self.id = id
        self.sequence = sequence
        self.createdAt = createdAt
        self.body = body
        self.replyTo = replyTo
    }
}

public enum CloseReason: UInt8, Sendable {
    case normal = 0  // shutting down / goodbye
    case duplicate = 1  // another session with the same peer was kept
    case protocolError = 2
    case keyChangePending = 3
    case notTrusted = 4
    case unknown = 255
}

public enum AppRecordError: Error, Equatable, Sendable, CustomStringConvertible {
    case recordTooLarge(Int)
    case malformed(type: UInt8, reason: String)
    case bodyTooLarge(Int)
    case invalidUTF8

    public var description: String {
        switch self {
        case .recordTooLarge(let n): return "application record of \(n) bytes exceeds \(WireLimits.maxRecordBytes)"
        case let .malformed(type, reason): return "malformed record type \(type): \(reason)"
        case .bodyTooLarge(let n): return "message body of \(n) bytes exceeds \(WireLimits.maxBodyBytes)"
        case .invalidUTF8: return "message body is not valid UTF-8"
        }
    }
}

extension AppRecord {
    /// Appends this record's encoding to `out`.
    public func encode(into out: inout [UInt8]) {
        func put(_ type: RecordType, _ payload: [UInt8]) {
            out.append(type.rawValue)
            out.appendUInt32(UInt32(payload.count))
            out.append(contentsOf: payload)
        }
        switch self {
        case let .file(.chunk(t, index, data)):
            // The bulk record: header and fields straight into `out`, the data copied once
            // (no payload array of its own first). The same bytes as `FileRecord.payload`.
            out.append(RecordType.fileChunk.rawValue)
            out.appendUInt32(UInt32(FileRecord.chunkHeaderLength + data.count))
            out.append(contentsOf: t.bytes)
            out.appendUInt64(index)
            out.append(contentsOf: data)
        case .chat(let c):
            var p = [UInt8]()
            let body = Array(c.body.utf8)
            p.reserveCapacity(32 + body.count)
            p.append(contentsOf: c.id.bytes)
            p.appendUInt64(c.sequence)
            p.appendUInt64(c.createdAt)
            if let replyTo = c.replyTo { p.append(contentsOf: replyTo.bytes) }
            p.append(contentsOf: body)
            put(c.replyTo == nil ? .chat : .reply, p)
        case .ack(let ids):
            put(.ack, Self.idListPayload(ids))
        case .readReceipt(let ids):
            put(.readReceipt, Self.idListPayload(ids))
        case let .refused(reason, ids):
            put(.refused, [reason.rawValue] + Self.idListPayload(ids))
        case .cardUpdate(let card):
            put(.cardUpdate, card)
        case .ping(let n):
            var p = [UInt8]()
            p.appendUInt64(n)
            put(.ping, p)
        case .pong(let n):
            var p = [UInt8]()
            p.appendUInt64(n)
            put(.pong, p)
        case let .close(reason, text):
            var p = [UInt8]([reason.rawValue])
            // Cut at a character boundary, never inside a UTF-8 sequence.
            var cut = 0
            for ch in text {
                let n = ch.utf8.count
                if cut + n > WireLimits.maxCloseReasonBytes { break }
                cut += n
            }
            p.append(contentsOf: Array(text.utf8.prefix(cut)))
            put(.close, p)
        case .roomOperation(let op):
            put(.roomOperation, op.encoded())
        case .roomChat(let c):
            var p = [UInt8]()
            let body = Array(c.body.utf8)
            p.reserveCapacity(RoomChatRecord.headerLength + body.count)
            p.append(contentsOf: c.id.bytes)
            p.append(contentsOf: c.roomID.bytes)
            p.appendUInt64(c.sequence)
            p.appendUInt64(c.createdAt)
            if let replyTo = c.replyTo { p.append(contentsOf: replyTo.bytes) }
            p.append(contentsOf: body)
            put(c.replyTo == nil ? .roomChat : .roomReply, p)
        case .messageAction(let a):
            put(a.recordType, a.payload())
        case .status(let status):
            put(.status, Array(status.text.utf8))
        case .listenPorts(let ports):
            var p = [UInt8]([UInt8(truncatingIfNeeded: ports.count)])
            for port in ports { p.appendUInt16(port) }
            put(.listenPorts, p)
        case .file(let f):
            put(f.recordType, f.payload())
        case .roomMessage(.verified(let m)):
            put(.roomMessage, m.encoded())
        case .roomMessage(.badSignature):
            // Only ever decoded: nothing sends a message whose signature does not verify.
            break
        case .roomHave(let h):
            put(.roomHave, h.encoded())
        case .roomCard(let c):
            put(.roomCard, c.encoded())
        case .roomOpsHave(let h):
            put(.roomOpsHave, h.encoded())
        case .addressRecord(let record):
            put(.addressRecord, record.encoded())
        case .contactTags(let tags):
            put(.contactTags, tags.encoded())
        case .dialBackRequest(let request):
            put(.dialBackRequest, request.encoded())
        case .dialBackResult(let result):
            put(.dialBackResult, result.encoded())
        case .unknown:
            break  // never sent
        }
    }

    /// `count: u16be || id[16] × count`: the payload of `ack` and `readReceipt`. Callers
    /// split longer lists (`WireLimits.maxAcksPerRecord`), so `count` always fits.
    static func idListPayload(_ ids: [MessageID]) -> [UInt8] {
        var p = [UInt8]()
        p.reserveCapacity(2 + ids.count * MessageID.length)
        p.appendUInt16(UInt16(truncatingIfNeeded: ids.count))
        for id in ids { p.append(contentsOf: id.bytes) }
        return p
    }

    static func decodeIDList(_ r: inout ByteReader, type: UInt8) throws -> [MessageID] {
        let n = Int(try r.readUInt16())
        guard n <= WireLimits.maxAcksPerRecord else {
            throw AppRecordError.malformed(type: type, reason: "\(n) ids exceed \(WireLimits.maxAcksPerRecord)")
        }
        var ids = [MessageID]()
        ids.reserveCapacity(n)
        for _ in 0..<n { ids.append(MessageID(exactly: try r.readBytes(MessageID.length))) }
        guard r.isAtEnd else { throw AppRecordError.malformed(type: type, reason: "trailing bytes") }
        return ids
    }

    public func encoded() -> [UInt8] {
        var out = [UInt8]()
        encode(into: &out)
        return out
    }

    /// Decodes one record's payload where it lies (in the record stream's buffer). A file
    /// chunk, the one bulk record, is read from the slice, so its data is copied once; any
    /// other record is decoded from a copy of its payload (small, and some keep it whole).
    public static func decode(type: UInt8, payload: ArraySlice<UInt8>) throws(AppRecordError) -> AppRecord {
        guard type == RecordType.fileChunk.rawValue else { return try decode(type: type, payload: Array(payload)) }
        var r = ByteReader(payload)
        do { return .file(try FileRecord.decode(.fileChunk, &r)) } catch { throw decodingError(error, type: type) }
    }

    /// What a decoder's error means for a record of `type`: a truncation or any other
    /// failure is a malformed record; a record error stays what it is.
    private static func decodingError(_ error: any Error, type: UInt8) -> AppRecordError {
        switch error {
        case let e as AppRecordError: return e
        case let e as ByteReader.Error: return .malformed(type: type, reason: "\(e)")
        default: return .malformed(type: type, reason: "\(error)")
        }
    }

    /// Decodes one record's payload, given its type byte.
    public static func decode(type: UInt8, payload: [UInt8]) throws(AppRecordError) -> AppRecord {
        guard let known = RecordType(rawValue: type) else {
            return .unknown(type: type, length: payload.count)
        }
        var r = ByteReader(payload)
        do {
            switch known {
            case .chat, .reply:
                guard let id = MessageID(bytes: try r.readBytes(MessageID.length)) else {
                    throw AppRecordError.malformed(type: type, reason: "message id")
                }
                let seq = try r.readUInt64()
                let created = try r.readUInt64()
                let replyTo = known == .reply ? MessageID(exactly: try r.readBytes(MessageID.length)) : nil
                let body = try r.readBytes(r.remaining)
                guard body.count <= WireLimits.maxBodyBytes else { throw AppRecordError.bodyTooLarge(body.count) }
                guard let text = String(validating: body, as: UTF8.self) else { throw AppRecordError.invalidUTF8 }
                return .chat(ChatRecord(id: id, sequence: seq, createdAt: created, body: text, replyTo: replyTo))
            case .ack:
                return .ack(try Self.decodeIDList(&r, type: type))
            case .readReceipt:
                return .readReceipt(try Self.decodeIDList(&r, type: type))
            case .refused:
                let reason = RefusalReason(rawValue: try r.readUInt8()) ?? .unknown
                return .refused(reason, try Self.decodeIDList(&r, type: type))
            case .cardUpdate:
                return .cardUpdate(payload)
            case .ping, .pong:
                let n = try r.readUInt64()
                guard r.isAtEnd else { throw AppRecordError.malformed(type: type, reason: "trailing bytes") }
                return known == .ping ? .ping(n) : .pong(n)
            case .close:
                let reason = CloseReason(rawValue: try r.readUInt8()) ?? .unknown
                let textBytes = try r.readBytes(min(r.remaining, WireLimits.maxCloseReasonBytes))
                return .close(reason, String(decoding: textBytes, as: UTF8.self))
            case .roomOperation:
                do { return .roomOperation(try RoomOperation.decode(payload)) } catch {
                    throw AppRecordError.malformed(type: type, reason: error.description)
                }
            case .edit, .delete, .reaction, .roomEdit, .roomDelete, .roomReaction:
                return .messageAction(try MessageActionRecord.decode(known, &r))
            case .status:
                do { return .status(try PresenceStatus(utf8: payload)) } catch {
                    throw AppRecordError.malformed(type: type, reason: error.description)
                }
            case .listenPorts:
                let count = Int(try r.readUInt8())
                guard (1...WireLimits.maxListenPorts).contains(count), r.remaining == 2 * count else {
                    throw AppRecordError.malformed(type: type, reason: "port count")
                }
                var ports: [UInt16] = []
                for _ in 0..<count {
                    let port = try r.readUInt16()
                    guard port != 0 else { throw AppRecordError.malformed(type: type, reason: "port 0") }
                    ports.append(port)
                }
                return .listenPorts(ports)
            case .fileOffer, .fileWant, .fileHashes, .fileChunk, .fileHave, .fileEnd:
                return .file(try FileRecord.decode(known, &r))
            case .addressRecord:
                do { return .addressRecord(try SignedAddressRecord.decode(payload)) } catch {
                    throw AppRecordError.malformed(type: type, reason: error.description)
                }
            case .contactTags:
                do { return .contactTags(try ContactTags.decode(payload)) } catch {
                    throw AppRecordError.malformed(type: type, reason: error.description)
                }
            case .dialBackRequest:
                let nonce = try r.readUInt64()
                guard let request = DialBackRequest(nonce: nonce, port: try r.readUInt16()), r.isAtEnd else {
                    throw AppRecordError.malformed(type: type, reason: "dial-back request")
                }
                return .dialBackRequest(request)
            case .dialBackResult:
                let nonce = try r.readUInt64()
                guard let outcome = DialBackResult.Outcome(rawValue: try r.readUInt8()), r.isAtEnd else {
                    throw AppRecordError.malformed(type: type, reason: "dial-back result")
                }
                return .dialBackResult(DialBackResult(nonce: nonce, outcome: outcome))
            case .roomMessage:
                do { return .roomMessage(.verified(try SignedRoomMessage.decode(payload))) } catch {
                    if case let .badSignature(room, author, id) = error {
                        return .roomMessage(.badSignature(roomID: room, author: author, id: id))
                    }
                    throw AppRecordError.malformed(type: type, reason: error.description)
                }
            case .roomHave:
                do { return .roomHave(try RoomHave.decode(payload[...])) } catch {
                    throw AppRecordError.malformed(type: type, reason: error.description)
                }
            case .roomCard:
                return .roomCard(try RoomCardRecord.decode(payload))
            case .roomOpsHave:
                return .roomOpsHave(try RoomOperationsHave.decode(payload))
            case .roomChat, .roomReply:
                let id = MessageID(exactly: try r.readBytes(MessageID.length))
                let room = RoomID(exactly: try r.readBytes(RoomID.length))
                let seq = try r.readUInt64()
                let created = try r.readUInt64()
                let replyTo = known == .roomReply ? MessageID(exactly: try r.readBytes(MessageID.length)) : nil
                let body = try r.readBytes(r.remaining)
                guard body.count <= WireLimits.maxBodyBytes else { throw AppRecordError.bodyTooLarge(body.count) }
                guard let text = String(validating: body, as: UTF8.self) else { throw AppRecordError.invalidUTF8 }
                return .roomChat(
                    RoomChatRecord(
                        id: id, roomID: room, sequence: seq, createdAt: created, body: text,
                        replyTo: replyTo))
            }
        } catch {
            throw decodingError(error, type: type)
        }
    }
}
