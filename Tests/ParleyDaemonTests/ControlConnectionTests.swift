import Foundation
import NIOCore
import NIOEmbedded
import ParleyControlProtocol
import ParleyCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

final class ControlConnectionTests: XCTestCase {
    func testLinesInAnswersOutInOrder() throws {
        let client = try ControlTestClient()
        try client.write(ControlTestClient.request(1, "node.whoami") + ControlTestClient.request(2, "peers.list"))
        let answers = try client.answers()
        XCTAssertEqual(answers.map(\.id), [1, 2])
        XCTAssertEqual(answers[0].result?["name"] as? String, "alice")
        XCTAssertEqual((answers[1].result?["peers"] as? [Any])?.count, 0)
    }

    func testALineSplitAcrossReadsIsOneRequest() throws {
        let client = try ControlTestClient()
        let line = ControlTestClient.request(7, "node.whoami")
        let cut = line.index(line.startIndex, offsetBy: 10)
        try client.write(String(line[..<cut]))
        XCTAssertTrue(try client.answers().isEmpty)
        try client.write(String(line[cut...]))
        XCTAssertEqual(try client.answers().map(\.id), [7])
    }

    func testBadRequestsAreAnsweredWithTheirOwnErrors() throws {
        let client = try ControlTestClient()
        try client.write(
            "{not json\n"
                + ControlTestClient.request(2, "no.such.method")
                + ControlTestClient.request(3, "messages.send", ["to": "bob", "bdy": "typo"])
                + ControlTestClient.request(nil, "node.whoami")  // a notification: no answer
                + ControlTestClient.request(nil, "no.such.method")  // not even an error
                + ControlTestClient.request(4, "messages.send", ["to": "bob", "body": "hi"]))
        let answers = try client.answers()
        XCTAssertEqual(answers.map(\.errorCode), [-32700, -32601, -32602, -32001])
        XCTAssertEqual(answers.map(\.id), [nil, 2, 3, 4])
        XCTAssertTrue(client.channel.isActive, "bad requests do not close the connection")
    }

    func testIdleClientIsClosedAfterTheTimeout() throws {
        let client = try ControlTestClient()
        try client.write("{\"jsonrpc\"")  // an unfinished line
        client.loop.advanceTime(by: .seconds(Int64(ControlLimits.idleLineTimeoutSeconds)) - .milliseconds(1))
        XCTAssertTrue(client.channel.isActive)
        client.loop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(try client.answers().map(\.errorCode), [ControlErrorCode.timeout.rawValue])
        XCTAssertFalse(client.channel.isActive)
        XCTAssertTrue(client.closedByServer)
    }

    func testARequestRestartsTheIdleTimer() throws {
        let client = try ControlTestClient()
        client.loop.advanceTime(by: .seconds(Int64(ControlLimits.idleLineTimeoutSeconds) - 1))
        try client.write(ControlTestClient.request(1, "node.whoami"))
        client.loop.advanceTime(by: .seconds(Int64(ControlLimits.idleLineTimeoutSeconds) - 1))
        XCTAssertTrue(client.channel.isActive)
        XCTAssertEqual(try client.answers().map(\.id), [1])
    }

    func testALineTooLongIsRefusedAndTheConnectionClosed() throws {
        let client = try ControlTestClient()
        try client.write(bytes: Array(repeating: UInt8(ascii: "a"), count: ControlLimits.maxLineBytes + 1))
        XCTAssertEqual(try client.answers().map(\.errorCode), [ControlErrorCode.lineTooLong.rawValue])
        XCTAssertFalse(client.channel.isActive)
    }

    /// `messages.send` with `wait` is answered later (`Reply.later`): with `timeout` when
    /// the message is not delivered in time, with the refusal at once when the peer refused
    /// it; the idle timeout stays off meanwhile. A client that leaves first gets nothing,
    /// and its wait stops (a refusal afterwards writes nothing).
    func testASendWaitIsAnsweredByTimeoutOrRefusalAndStopsWhenTheClientLeaves() throws {
        let client = try ControlTestClient()
        _ = try pinBob(client)
        let idle = Int64(ControlLimits.idleLineTimeoutSeconds)
        try client.write(
            ControlTestClient.request(
                1, "messages.send", ["to": "bob", "body": "one", "wait": true, "timeoutMs": (idle + 5) * 1000]))
        XCTAssertEqual(try client.answers().count, 0, "waits for the delivery")
        client.loop.advanceTime(by: .seconds(idle + 1))
        XCTAssertTrue(client.channel.isActive, "no idle timeout while an answer is owed")
        client.loop.advanceTime(by: .seconds(4))
        let timedOut = try client.answers()
        XCTAssertEqual(timedOut.map(\.id), [1])
        XCTAssertEqual(timedOut.map(\.errorCode), [ControlErrorCode.timeout.rawValue])

        try client.write(
            ControlTestClient.request(
                2, "messages.send", ["to": "bob", "body": "two", "wait": true, "timeoutMs": 60_000]))
        let two = try XCTUnwrap(try client.node.node.store.messages(peer: nil, after: nil, limit: 10).last)
        client.node.node.emit(.messageRefused(two, .peerQuota))
        client.loop.run()  // answers leave at the end of the loop's turn
        let refused = try client.answers()
        XCTAssertEqual(refused.map(\.id), [2])
        XCTAssertEqual(refused.map(\.errorCode), [ControlErrorCode.timeout.rawValue])
        let message = (refused.first?["error"] as? [String: Any])?["message"] as? String
        XCTAssertTrue(message?.hasPrefix("not delivered: ") == true, message ?? "no message")

        try client.write(
            ControlTestClient.request(
                3, "messages.send", ["to": "bob", "body": "three", "wait": true, "timeoutMs": 60_000]))
        let three = try XCTUnwrap(try client.node.node.store.messages(peer: nil, after: nil, limit: 10).last)
        let watching = client.node.node.observers.count
        try client.channel.close().wait()
        XCTAssertEqual(client.node.node.observers.count, watching - 1, "the wait stopped observing the node")
        client.node.node.emit(.messageRefused(three, .peerQuota))
        client.loop.advanceTime(by: .seconds(120))
        XCTAssertEqual(try client.answers().count, 0, "the client left: nothing written")
    }

    /// Pins bob in alice's store, as a first handshake would.
    private func pinBob(_ client: ControlTestClient) throws -> PeerRecord {
        let bob = try TestIdentity(name: "bob").pinnedRecord()
        try client.node.node.store.upsertPeer(bob)
        return bob
    }

    private func send(_ id: Int, _ to: String, _ body: String) -> String {
        ControlTestClient.request(id, "messages.send", ["to": to, "body": body])
    }

    func testPipelinedSendsAreStoredAndAnsweredInOrder() throws {
        let client = try ControlTestClient()
        _ = try pinBob(client)
        try client.write((1...5).map { send($0, "bob", "m\($0)") }.joined())
        let answers = try client.answers()
        XCTAssertEqual(answers.map(\.id), [1, 2, 3, 4, 5])
        let messages = answers.compactMap { $0.result?["message"] as? [String: Any] }
        XCTAssertEqual(messages.map { $0["body"] as? String }, ["m1", "m2", "m3", "m4", "m5"])
        XCTAssertEqual(Set(messages.compactMap { $0["state"] as? String }), ["queued"])
        XCTAssertEqual(
            try client.node.node.store.messages(peer: nil, after: nil, limit: 10).map(\.body),
            ["m1", "m2", "m3", "m4", "m5"], "every answered message is in the store")
    }

    /// Group commit (Store+GroupCommit.swift): pipelined sends are stored at once but
    /// answered only once their commit is on disk, and an answer written after them (a
    /// request that stored nothing) waits behind them: answers stay in request order.
    func testSendsAreAnsweredOnlyOnceTheirCommitIsSynced() throws {
        let client = try ControlTestClient()
        _ = try pinBob(client)
        let store = client.node.node.store
        let held = HeldSync()
        try store.startGroupCommit(sync: { held.sync() }, hop: { held.hop($0) }, failed: { _ in XCTFail("failed") })
        try client.write(send(1, "bob", "m1") + send(2, "bob", "m2"))
        try client.write(ControlTestClient.request(3, "node.whoami"))
        XCTAssertEqual(try client.answers().count, 0, "nothing is answered before the sync")
        XCTAssertEqual(try store.counts().queued, 2, "committed already")
        held.release()
        client.loop.run()
        XCTAssertEqual(try client.answers().map(\.id), [1, 2, 3])
        // Nothing pending: the next answer goes straight out.
        try client.write(ControlTestClient.request(4, "node.whoami"))
        XCTAssertEqual(try client.answers().map(\.id), [4])
        held.gate.signal()
        try store.close()
    }

    /// One write per turn: the answers to a read's pipelined requests leave in one buffer
    /// (one write system call), not one per line as before.
    func testPipelinedAnswersLeaveInOneWrite() throws {
        let client = try ControlTestClient()
        try client.write((1...20).map { ControlTestClient.request($0, "node.whoami") }.joined())
        let writes = try client.writes()
        XCTAssertEqual(writes.count, 1, "one write for the turn's 20 answers")
        let ids = writes.joined().split(separator: "\n").map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["id"] as? Int
        }
        XCTAssertEqual(ids, (1...20).map { $0 })
    }

    /// With group commit the answers held for the sync are released together: one write for
    /// all of them and the answer held behind them.
    func testAnswersReleasedBySyncLeaveInOneWrite() throws {
        let client = try ControlTestClient()
        _ = try pinBob(client)
        let store = client.node.node.store
        let held = HeldSync()
        try store.startGroupCommit(sync: { held.sync() }, hop: { held.hop($0) }, failed: { _ in XCTFail("failed") })
        try client.write(
            (1...10).map { send($0, "bob", "m\($0)") }.joined() + ControlTestClient.request(11, "node.whoami"))
        XCTAssertEqual(try client.writes().count, 0, "nothing is written before the sync")
        held.release()
        client.loop.run()
        let writes = try client.writes()
        XCTAssertEqual(writes.count, 1)
        XCTAssertEqual(writes.first?.split(separator: "\n").count, 11)
        held.gate.signal()
        try store.close()
    }

    /// The bug: a pipelined batch resolved `#room` as a peer name (peerNotFound).
    func testPipelinedRoomSendsGoToTheRoom() throws {
        let client = try ControlTestClient()
        let bob = try pinBob(client)
        _ = try client.node.node.createRoom(name: "lab", members: [bob])
        try client.write(
            send(1, "#lab", "r1") + send(2, "bob", "d1") + send(3, "#lab", "r2")
                + send(4, "#nope", "lost") + send(5, "bob", "d2"))
        let answers = try client.answers()
        XCTAssertEqual(answers.map(\.id), [1, 2, 3, 4, 5])
        XCTAssertEqual(answers.map(\.errorCode), [nil, nil, nil, ControlErrorCode.roomNotFound.rawValue, nil])
        let rooms = answers.map {
            (($0.result?["message"] as? [String: Any])?["room"] as? [String: Any])?["name"] as? String
        }
        XCTAssertEqual(rooms, ["lab", nil, "lab", nil, nil])
        let stored = try client.node.node.store.messages(peer: nil, after: nil, limit: 10)
        XCTAssertEqual(stored.map(\.body), ["r1", "d1", "r2", "d2"], "stored in request order")
        XCTAssertEqual(stored.map { $0.room != nil }, [true, false, true, false])
    }

    /// A pipelined run of room messages is stored together (`sendManyToRoom`), each signed
    /// with the next of this node's room sequences, in request order.
    func testPipelinedRoomSendsAreSignedWithConsecutiveRoomSequences() throws {
        let client = try ControlTestClient()
        let bob = try pinBob(client)
        let room = try client.node.node.createRoom(name: "lab", members: [bob])
        try client.write((1...4).map { send($0, "#lab", "r\($0)") }.joined())
        let answers = try client.answers()
        XCTAssertEqual(answers.map(\.id), [1, 2, 3, 4])
        XCTAssertEqual(answers.map(\.errorCode), [nil, nil, nil, nil])
        let store = client.node.node.store
        let me = client.node.node.myIdentityKey
        let stored = try store.messages(peer: nil, after: nil, limit: 10)
        XCTAssertEqual(stored.map(\.body), ["r1", "r2", "r3", "r4"])
        let sequences = try stored.map { m -> UInt64 in
            let bytes = try XCTUnwrap(try store.signedRoomMessage(id: m.id, author: me))
            return try SignedRoomMessage.decode(bytes).roomSequence
        }
        XCTAssertEqual(sequences, [1, 2, 3, 4])
        XCTAssertEqual(try store.nextRoomSequence(room: room.id, author: me), 5)
    }

    /// One request and the same request in a pipelined batch get the same bytes.
    func testBatchedAndSingleSendAnswersAreTheSameShape() throws {
        let client = try ControlTestClient()
        _ = try pinBob(client)
        try client.write(send(1, "bob", "x"))
        try client.write(send(2, "bob", "x") + send(3, "bob", "x"))
        let lines = try client.rawLines()
        XCTAssertEqual(lines.count, 3)
        func shape(_ line: String) -> String {
            // Only the id, message id, sequence and times differ.
            line.replacingOccurrences(of: #""id":"[0-9a-f]+""#, with: "ID", options: .regularExpression)
                .replacingOccurrences(of: #"[0-9]+"#, with: "N", options: .regularExpression)
        }
        XCTAssertEqual(shape(lines[0]), shape(lines[1]))
        XCTAssertEqual(shape(lines[1]), shape(lines[2]))
    }

    /// The same for a room: a single send and a pipelined one went down two paths, and the
    /// pipelined answer lacked how many of the room's members it goes to and are online.
    func testBatchedAndSingleRoomSendAnswersAreTheSameShape() throws {
        let client = try ControlTestClient()
        let bob = try pinBob(client)
        _ = try client.node.node.createRoom(name: "lab", members: [bob])
        try client.write(send(1, "#lab", "x"))
        try client.write(send(2, "#lab", "x") + send(3, "#lab", "x"))
        let lines = try client.rawLines()
        XCTAssertEqual(lines.count, 3)
        XCTAssertTrue(lines[0].contains("roomRecipients"), lines[0])
        func shape(_ line: String) -> String {
            line.replacingOccurrences(of: #""id":"[0-9a-f]+""#, with: "ID", options: .regularExpression)
                .replacingOccurrences(of: #"[0-9]+"#, with: "N", options: .regularExpression)
        }
        XCTAssertEqual(shape(lines[0]), shape(lines[1]))
        XCTAssertEqual(shape(lines[1]), shape(lines[2]))
    }

    func testARotateKeyFailureSaysWhatFailed() throws {
        let client = try ControlTestClient()
        let before = client.node.node.ownIdentity.card.noiseKey
        // A state directory that cannot be created: a regular file is in its path.
        let blocker = client.node.directory + "/not-a-directory"
        XCTAssertTrue(FileManager.default.createFile(atPath: blocker, contents: Data()))
        client.node.node.ownIdentity.stateDirectory = blocker + "/state"
        try client.write(ControlTestClient.request(1, "node.rotate_key"))
        let answer = try XCTUnwrap(try client.answers().first)
        XCTAssertEqual(answer.errorCode, ControlErrorCode.storageFailed.rawValue)
        let message = try XCTUnwrap(answer.errorMessage)
        XCTAssertTrue(message.hasPrefix("could not rotate the Noise key, the old key stays in use"), message)
        XCTAssertFalse(message.contains("could not store the message"), message)
        XCTAssertEqual(client.node.node.ownIdentity.card.noiseKey, before)
    }
}
