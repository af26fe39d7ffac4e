import Foundation
import FuzzFixtures
import ParleyControlProtocol
import ParleyCore

// Writes the seed corpora under Fuzz/Corpus/<Target>/ from real traffic: every seed is
// produced by Parley's own encoders (or taken from the repository's docs and example
// config), so the fuzzer starts from inputs that pass the first checks and reaches deep.
// Deterministic: fixed keys and ephemerals (FuzzFixtures), fixed ids and times, so
// rerunning it rewrites the same bytes. Usage: MakeSeeds <repository root>
// (scripts/fuzz.sh --seeds runs it).

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: MakeSeeds <repository root>\n".utf8))
    exit(2)
}
let root = URL(fileURLWithPath: CommandLine.arguments[1])
let corpus = root.appendingPathComponent("Fuzz/Corpus")

func write(_ target: String, _ name: String, _ bytes: [UInt8]) throws {
    let directory = corpus.appendingPathComponent(target)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try Data(bytes).write(to: directory.appendingPathComponent(name))
}

func framed(_ payloads: [[UInt8]]) throws -> [UInt8] {
    try payloads.flatMap { try Frame.encode($0) }
}

func messageID(_ fill: UInt8) -> MessageID {
    // Force-unwrap safe: exactly MessageID.length bytes.
    MessageID(bytes: [UInt8](repeating: fill, count: MessageID.length))!
}

// --- A real handshake between the fixtures' initiator and responder -------------------

var initiator = FuzzFixtures.initiatorHandshake()
var responder = FuzzFixtures.responderHandshake()
let message1 = try initiator.start()
guard case .send(let message2) = try responder.receive(message1),
    case .established(let message3?, var initiatorSession) = try initiator.receive(message2),
    case .established(nil, var responderSession) = try responder.receive(message3)
else {
    fatalError("the fixtures' handshake did not complete")  // a bug in FuzzFixtures
}
let initiatorPayload = HandshakePayload(
    card: FuzzFixtures.initiator.card.encoded(),
    bootID: FuzzFixtures.initiator.bootID
).encoded()
let initiatorPayloadWithFeatures = HandshakePayload(
    card: FuzzFixtures.initiator.card.encoded(),
    bootID: FuzzFixtures.initiator.bootID, features: .supported
).encoded()

// --- Application records --------------------------------------------------------------

let records: [(String, AppRecord)] = [
    ("chat", .chat(ChatRecord(id: messageID(0x11), sequence: 1, createdAt: 1_770_000_000_000, body: "hi"))),
    (
        "chat-unicode",
        .chat(
            ChatRecord(
                id: messageID(0x12), sequence: 2, createdAt: 1_770_000_001_000,
                body: "lunch? 🍜 — à tout à l'heure\nsecond line"))
    ),
    ("chat-empty", .chat(ChatRecord(id: messageID(0x13), sequence: 3, createdAt: 0, body: ""))),
    ("ack", .ack([messageID(0x11), messageID(0x12)])),
    ("ack-none", .ack([])),
    ("card-update", .cardUpdate(FuzzFixtures.initiator.card.encoded())),
    ("ping", .ping(42)),
    ("pong", .pong(42)),
    ("close", .close(.normal, "shutting down")),
    ("close-duplicate", .close(.duplicate, "")),
    (
        "reply",
        .chat(
            ChatRecord(
                id: messageID(0x14), sequence: 4, createdAt: 1_770_000_002_000, body: "yes",
                replyTo: messageID(0x11)))
    ),
    (
        "edit",
        .messageAction(
            MessageActionRecord(
                id: messageID(0x15), sequence: 5, createdAt: 1_770_000_003_000,
                target: messageID(0x11), action: .edit(body: "hi there")))
    ),
    (
        "delete",
        .messageAction(
            MessageActionRecord(
                id: messageID(0x16), sequence: 6, createdAt: 1_770_000_004_000,
                target: messageID(0x11), action: .delete))
    ),
    (
        "reaction",
        .messageAction(
            MessageActionRecord(
                id: messageID(0x17), sequence: 7, createdAt: 1_770_000_005_000,
                target: messageID(0x11),
                action: .reaction(try Reaction("👍🏽"), added: true)))
    ),
    ("status", .status(try PresenceStatus(typed: "in a meeting until 3"))),
    (
        "room-reply",
        .roomChat(
            RoomChatRecord(
                id: messageID(0x18), roomID: RoomID(exactly: Array(repeating: 0xa0, count: 16)),
                sequence: 8, createdAt: 1_770_000_006_000, body: "+1",
                replyTo: messageID(0x11)))
    ),
    (
        "room-delete",
        .messageAction(
            MessageActionRecord(
                id: messageID(0x19), sequence: 9, createdAt: 1_770_000_007_000,
                target: messageID(0x18), action: .delete,
                room: RoomID(exactly: Array(repeating: 0xa0, count: 16))))
    )
]

// File records (docs/PROTOCOL.md "Files"): a small picture offered to a room, the
// receiver's want, the hash list, a short last chunk, the checkpoint and the end.
let fileTransfer = TransferID(exactly: Array(repeating: 0xf1, count: TransferID.length))
let fileChunks: [[UInt8]] = [Array(repeating: 0x42, count: 4_096), Array("the last, short chunk".utf8)]
let fileChunkHashes = fileChunks.map { FileHash.of($0) }
let fileRecords: [(String, AppRecord)] = [
    (
        "file-offer",
        .file(
            .offer(
                FileOffer(
                    transfer: fileTransfer, size: UInt64(fileChunks.joined().count), chunkSize: 4_096,
                    contentHash: FileHash.of(Array(fileChunks.joined())), listHash: FileHash.listHash(fileChunkHashes),
                    room: RoomID(exactly: Array(repeating: 0xa0, count: 16)), name: "photo (1).png",
                    mediaType: "image/png", caption: "the whiteboard 🖊", thumbnail: [0x89, 0x50, 0x4E, 0x47])))
    ),
    ("file-want", .file(.want(fileTransfer, from: 0, needList: true))),
    ("file-hashes", .file(.hashes(fileTransfer, first: 0, hashes: fileChunkHashes))),
    ("file-chunk", .file(.chunk(fileTransfer, index: 1, data: fileChunks[1]))),
    ("file-have", .file(.have(fileTransfer, verified: 1))),
    ("file-end", .file(.end(fileTransfer, .failed, "not enough disk space at the recipient")))
]
// Room sync (docs/PROTOCOL.md "Room sync"): a signed room message and a summary.
let syncRoom = RoomID(exactly: Array(repeating: 0xa0, count: 16))
let syncMessage = try SignedRoomMessage.sign(
    roomID: syncRoom, roomSequence: 1, id: messageID(0x1a), createdAt: 1_770_000_008_000,
    anchor: [RoomOperationHash(exactly: Array(repeating: 0x33, count: 32))], body: "passed on by a member",
    by: FuzzFixtures.initiator.identity)
// A signed reaction to it (kinds 3 ... 5: "Signed edits, deletions and reactions").
let syncChange = try SignedRoomMessage.signChange(
    .reaction(try Reaction("👍"), added: true), of: messageID(0x1a), roomID: syncRoom, roomSequence: 2,
    id: messageID(0x1b), createdAt: 1_770_000_009_000,
    anchor: [RoomOperationHash(exactly: Array(repeating: 0x33, count: 32))], by: FuzzFixtures.initiator.identity)
let syncRecords: [(String, AppRecord)] = [
    ("room-message", .roomMessage(.verified(syncMessage))),
    ("room-message-reaction", .roomMessage(.verified(syncChange))),
    (
        "room-have",
        .roomHave(
            RoomHave(
                roomID: syncRoom,
                holding: [FuzzFixtures.initiator.identity.publicKey: SequenceRanges([1...3, 5...9])]))
    ),
    // A member's card passed on by the room ("Room cards") and the heads of the room's
    // operation graph ("Operation summaries").
    ("room-card", .roomCard(RoomCardRecord(roomID: syncRoom, card: FuzzFixtures.responder.card.encoded()))),
    (
        "room-ops-have",
        .roomOpsHave(
            RoomOperationsHave(
                roomID: syncRoom,
                heads: [
                    RoomOperationHash(exactly: Array(repeating: 0x33, count: 32)),
                    RoomOperationHash(exactly: Array(repeating: 0x44, count: 32))
                ]))
    )
]
var stream = RecordStreamEncoder()
for (name, record) in syncRecords { try write("FuzzAppRecord", name, record.encoded()) }
for (name, record) in fileRecords { try write("FuzzAppRecord", name, record.encoded()) }
for (name, record) in records {
    try write("FuzzAppRecord", name, record.encoded())
    stream.append(record)
}
let plaintextChunks = stream.drainChunks()
try write("FuzzAppRecord", "stream-all-records", plaintextChunks.flatMap { $0 })
// An unknown record type (skipped by receivers): type 0x7f, 3 bytes.
try write("FuzzAppRecord", "unknown-type", [0x7F, 0, 0, 0, 3, 1, 2, 3])

// --- Frames ---------------------------------------------------------------------------

let transportMessages = try plaintextChunks.map { try initiatorSession.transport.seal($0) }
for message in transportMessages { _ = try responderSession.transport.open(message) }
try write("FuzzFrameDecoder", "handshake", try framed([message1, message2, message3]))
try write("FuzzFrameDecoder", "session", try framed([message1, message2, message3] + transportMessages))
try write("FuzzFrameDecoder", "one-frame", try framed([[0x2A]]))
try write("FuzzFrameDecoder", "max-length-header", [0xFF, 0xFF, 0x00])
try write("FuzzFrameDecoder", "zero-length-header", [0x00, 0x00])

// --- Handshake ------------------------------------------------------------------------

try write("FuzzHandshakeResponder", "message1", message1)
try write("FuzzHandshakeResponder", "message3", message3)
try write("FuzzHandshakeResponder", "payload", initiatorPayload)
try write("FuzzHandshakeResponder", "payload-features", initiatorPayloadWithFeatures)

// --- Cards ----------------------------------------------------------------------------

try write("FuzzCardDecoder", "initiator", FuzzFixtures.initiator.card.encoded())
try write("FuzzCardDecoder", "responder", FuzzFixtures.responder.card.encoded())
let longest = try Card.issue(
    identity: FuzzFixtures.initiator.identity, noiseKey: FuzzFixtures.initiator.staticKey.publicKey,
    displayName: String(repeating: "é", count: Card.maxDisplayNameLength / 2),
    // Three full labels, three dots and a 61-byte label: exactly the 253-byte limit.
    hostName: Array(repeating: String(repeating: "h", count: Card.maxHostLabelLength), count: 3)
        .joined(separator: ".") + "." + String(repeating: "h", count: 61),
    issuedAt: 1_767_225_600, sequence: UInt64.max, expiresAt: nil)
try write("FuzzCardDecoder", "longest-no-expiry", longest.encoded())

// --- Control requests -----------------------------------------------------------------

// The request lines of docs/CONTROL.md, as written there.
let controlDoc = try String(contentsOf: root.appendingPathComponent("docs/CONTROL.md"), encoding: .utf8)
var docLines = 0
for rawLine in controlDoc.split(separator: "\n") {
    var line = Substring(rawLine)
    if line.hasPrefix("> ") { line = line.dropFirst(2) }
    guard line.hasPrefix("{\"jsonrpc\"") || line.hasPrefix("{\"id\"") else { continue }
    docLines += 1
    try write("FuzzJSONRPC", "control-md-\(docLines)", Array(line.utf8))
}
// One request per method, encoded as the CLI encodes it.
func request<P: ControlCallParams>(_ name: String, id: Int, _ params: P) throws {
    try write("FuzzJSONRPC", "request-\(name)", try ControlJSON.line(JSONRPCRequest(id: .number(id), call: params)))
}
try request("node-status", id: 1, NodeStatusParams())
try request("node-whoami", id: 2, NodeWhoamiParams())
try request("peers-list", id: 3, PeersListParams())
try request("peers-connect", id: 4, PeersConnectParams(address: "[fe80::1%eth0]:7744"))
try request("messages-send", id: 5, MessagesSendParams(to: "bob", body: "lunch? 🍜", wait: true, timeoutMs: 5000))
try request("messages-list", id: 6, MessagesListParams(peer: "abcd-efgh", after: 10, before: 100, limit: 20))
try request("messages-subscribe", id: 7, MessagesSubscribeParams(peer: "bob"))
try request(
    "trust-verify", id: 8,
    TrustVerifyParams(peer: "bob", fingerprint: FuzzFixtures.initiator.card.fingerprint.description))
try request("trust-accept", id: 9, TrustAcceptParams(peer: "bob"))
try request("messages-edit", id: 10, MessagesEditParams(message: "0123456789abcdef", body: "fixed"))
try request("messages-react", id: 11, MessagesReactParams(message: "01234567", reaction: "👍", remove: true))
try request(
    "files-send", id: 12,
    FilesSendParams(to: "#team", files: [FileAttachment(name: "photo.png", mediaType: "image/png")], caption: "hi"))
try request("files-list", id: 13, FilesListParams(limit: 20, id: "abcd"))
try request("files-accept", id: 14, FilesAcceptParams(id: "f1f1f1f1"))
try request("files-reject", id: 15, FilesRejectParams(id: "f1f1"))
try request("files-cancel", id: 16, FilesCancelParams(id: "f1f1f1"))
try request("files-thumbnail", id: 17, FilesThumbnailParams(id: "f1f1f1f1"))
// Several requests on one connection, the way LineBuffer sees them.
let session = try [
    ControlJSON.line(JSONRPCRequest(id: .string("a"), call: NodeStatusParams())),
    ControlJSON.line(JSONRPCRequest(id: .number(2), call: MessagesSubscribeParams())),
    ControlJSON.line(JSONRPCRequest(id: .number(3), call: MessagesSendParams(to: "bob", body: "hi")))
].flatMap { $0 }
try write("FuzzJSONRPC", "connection-three-requests", session)

// --- Config file ----------------------------------------------------------------------

// The shipped example as is (all comments), and with every example setting uncommented.
let example = try String(contentsOf: root.appendingPathComponent("systemd/parleyd.toml.example"), encoding: .utf8)
try write("FuzzConfigFile", "parleyd.toml.example", Array(example.utf8))
let uncommented = example.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
    // "#key = value" is a setting; "# text" (with a space) is prose.
    if line.hasPrefix("#"), let second = line.dropFirst().first, second.isLetter { return String(line.dropFirst()) }
    return String(line)
}.joined(separator: "\n")
try write("FuzzConfigFile", "parleyd.toml.uncommented", Array(uncommented.utf8))

print("wrote seeds under \(corpus.path)")
