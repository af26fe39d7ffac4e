import Foundation
import ParleyControlProtocol
import XCTest

/// The room part of the control protocol: params, results, the event, `MessageInfo.room`.
final class ControlRoomsProtocolTests: XCTestCase {
    static let room = RoomInfo(
        id: String(repeating: "ab", count: 16), name: "lab",
        members: [
            RoomMemberInfo(name: "alice", fingerprint: "aaaa-bbbb", you: true),
            RoomMemberInfo(name: "bob", fingerprint: "cccc-dddd", you: false)
        ],
        member: true, creator: "aaaa-bbbb", creatorName: "alice", createdAt: 1_700_000_000_000, version: 3, queued: 1)

    static let message = MessageInfo(
        id: "0123abcd", from: "aaaa-bbbb", fromName: "alice", to: room.id, toName: "#lab", direction: .outgoing,
        sequence: 9, createdAt: 1_700_000_000_000, body: "hi room", state: .queued, deliveredAt: nil, cursor: 12,
        room: MessageRoom(id: room.id, name: "lab"))

    private func checkParams<P: ControlCallParams>(_ params: P, file: StaticString = #filePath, line: UInt = #line)
        throws
    {
        let request = try JSONRPCRequest(id: .number(1), call: params)
        XCTAssertTrue(ControlMethod.all.contains(P.method), file: file, line: line)
        XCTAssertEqual(
            Set((request.params ?? [:]).keys), Set(P.fieldNames), "fieldNames of \(P.self)", file: file, line: line)
        let bytes = try ControlJSON.line(request)
        let parsed = try ControlRequestParser.parse(line: Array(bytes.dropLast())).get()
        XCTAssertEqual(try parsed.decodeParams(P.self), params, file: file, line: line)
    }

    private func checkResult<R: Codable & Hashable>(_ result: R, file: StaticString = #filePath, line: UInt = #line)
        throws
    {
        let bytes = try ControlJSON.line(JSONRPCResponse.success(id: .string("r"), result: result))
        guard case .success(.response(let response)) = ControlServerMessage.parse(line: Array(bytes.dropLast())) else {
            return XCTFail("response did not parse", file: file, line: line)
        }
        XCTAssertEqual(try response.decodeResult(R.self), result, file: file, line: line)
    }

    private func paramsError<P: ControlCallParams>(_ type: P.Type, _ params: [String: JSONValue]) -> JSONRPCError? {
        do {
            _ = try JSONRPCRequest(id: .number(1), method: P.method, params: params).decodeParams(P.self)
            XCTFail("accepted \(params)")
            return nil
        } catch {
            return error
        }
    }

    func testRoomParamsRoundTrip() throws {
        try checkParams(RoomsListParams())
        try checkParams(
            RoomsCreateParams(name: "lab ✓", members: ["bob", "abcd-ef"], onlyAdminsAdd: false, sharedHistory: true))
        try checkParams(RoomsCreateParams(name: "solo", members: [], onlyAdminsAdd: true, sharedHistory: false))
        try checkParams(RoomsAcceptParams(room: "#lab"))
        try checkParams(RoomsDeclineParams(room: "abcd"))
        try checkParams(RoomsSetRoleParams(room: "#lab", peer: "carol", role: "admin"))
        try checkParams(RoomsRenameParams(room: "#lab", name: "office"))
        try checkParams(RoomsSetPolicyParams(room: "#lab", onlyAdminsAdd: true, sharedHistory: false))
        XCTAssertNotNil(
            paramsError(RoomsSetPolicyParams.self, ["room": .string("#lab")]), "a policy change names a setting")
        try checkParams(RoomsAddParams(room: "#lab", peer: "carol"))
        try checkParams(RoomsRemoveParams(room: "abcd", peer: "carol"))
        try checkParams(RoomsLeaveParams(room: "#lab"))
    }

    func testRoomResultsAndEventRoundTrip() throws {
        try checkResult(RoomsListResult(rooms: [Self.room]))
        try checkResult(RoomResult(room: Self.room))
        try checkResult(MessagesSendResult(message: Self.message))
        let bytes = try ControlJSON.line(JSONRPCNotification(event: RoomUpdatedEvent(room: Self.room)))
        guard case .success(.notification(let n)) = ControlServerMessage.parse(line: Array(bytes.dropLast())) else {
            return XCTFail("notification did not parse")
        }
        XCTAssertEqual(n.method, "room.updated")
        XCTAssertTrue(ControlEvent.all.contains(ControlEvent.roomUpdated))
        XCTAssertEqual(try ControlEventPayload(n), .roomUpdated(RoomUpdatedEvent(room: Self.room)))
    }

    func testMessageRoomIsNullForDirectMessagesAndDecodesWhenAbsent() throws {
        var direct = Self.message
        direct.room = nil
        let text = String(decoding: try ControlJSON.line(direct), as: UTF8.self)
        XCTAssertTrue(text.contains(#""room":null"#), text)
        // A client of an older daemon (no "room" member) still decodes messages.
        var object = try JSONValue(encoding: direct)
        if case .object(var members) = object {
            members["room"] = nil
            object = .object(members)
        }
        XCTAssertEqual(try object.decode(as: MessageInfo.self), direct)
        let roomText = String(decoding: try ControlJSON.line(Self.message), as: UTF8.self)
        XCTAssertTrue(roomText.contains(#""room":{"afterRemoval":false,"id":"#), roomText)
        // A daemon older than `afterRemoval` sends none: read as false.
        XCTAssertEqual(
            try JSONValue.object(["id": .string("ab"), "name": .string("lab")]).decode(as: MessageRoom.self),
            MessageRoom(id: "ab", name: "lab", afterRemoval: false))
    }

    func testNewRoomParamsAreValidated() {
        XCTAssertEqual(
            paramsError(
                RoomsSetRoleParams.self,
                [
                    "room": .string("#lab"), "peer": .string("bob"),
                    "role": .string("king")
                ])?.knownCode, .invalidParams)
        XCTAssertEqual(
            paramsError(RoomsRenameParams.self, ["room": .string("#lab"), "name": .string("#x")])?.knownCode,
            .invalidParams)
        XCTAssertEqual(paramsError(RoomsAcceptParams.self, ["room": .string("")])?.knownCode, .invalidParams)
        XCTAssertEqual(paramsError(RoomsSetPolicyParams.self, ["room": .string("#lab")])?.knownCode, .invalidParams)
        // A create from a client that does not know the policy field: any member adds.
        XCTAssertNoThrow(
            try JSONRPCRequest(
                id: .number(1), method: RoomsCreateParams.method,
                params: ["name": .string("lab"), "members": .array([])]
            )
            .decodeParams(RoomsCreateParams.self))
    }

    func testRoomParamsAreValidated() {
        XCTAssertEqual(
            paramsError(RoomsCreateParams.self, ["name": .string(""), "members": .array([])])?.knownCode, .invalidParams
        )
        XCTAssertEqual(
            paramsError(RoomsCreateParams.self, ["name": .string("#lab"), "members": .array([])])?.knownCode,
            .invalidParams)
        let long = String(repeating: "x", count: ControlLimits.maxRoomNameBytes + 1)
        XCTAssertEqual(
            paramsError(RoomsCreateParams.self, ["name": .string(long), "members": .array([])])?.knownCode,
            .invalidParams)
        let many = JSONValue.array((0..<ControlLimits.maxCreateMembers).map { .string("p\($0)") })
        XCTAssertEqual(
            paramsError(RoomsCreateParams.self, ["name": .string("lab"), "members": many])?.knownCode, .invalidParams)
        XCTAssertEqual(
            paramsError(RoomsCreateParams.self, ["name": .string("lab"), "members": .array([.string("")])])?.knownCode,
            .invalidParams)
        XCTAssertEqual(paramsError(RoomsCreateParams.self, ["name": .string("lab")])?.knownCode, .invalidParams)
        XCTAssertEqual(
            paramsError(RoomsAddParams.self, ["room": .string("#lab"), "peer": .string("b"), "x": .int(1)])?.knownCode,
            .invalidParams)
        XCTAssertEqual(
            paramsError(RoomsRemoveParams.self, ["room": .string(""), "peer": .string("b")])?.knownCode, .invalidParams)
        XCTAssertEqual(paramsError(RoomsLeaveParams.self, [:])?.knownCode, .invalidParams)
    }

    func testRoomErrorsCarryTheirCandidates() throws {
        let e = JSONRPCError.roomAmbiguous(
            "#lab", candidates: [RoomCandidate(id: "ab12", name: "lab"), RoomCandidate(id: "cd34", name: "lab")])
        XCTAssertEqual(e.knownCode, .roomAmbiguous)
        XCTAssertEqual(e.payload(as: RoomAmbiguousData.self)?.candidates.map(\.id), ["ab12", "cd34"])
        XCTAssertEqual(JSONRPCError.roomNotFound("#x").code, -32021)
    }
}
