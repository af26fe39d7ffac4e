import ParleyControlProtocol
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// The route table: every method has exactly one route, and a request is decoded into its
/// typed params (or the error that answers it) in one step.
final class ControlCallTests: XCTestCase {
    func testEveryMethodHasARouteAndNoRouteIsUnknown() {
        XCTAssertEqual(Set(ControlCall.routes.keys), Set(ControlMethod.all))
    }

    func testARequestIsDecodedIntoItsTypedParams() throws {
        let request = JSONRPCRequest(
            id: .number(1), method: ControlMethod.messagesSend,
            params: ["to": .string("#lab"), "body": .string("hi")])
        guard case .success(.messagesSend(let p)) = ControlCall.decode(request) else {
            return XCTFail("not decoded as messages.send: \(ControlCall.decode(request))")
        }
        XCTAssertEqual(p.to, "#lab")
        XCTAssertEqual(p.body, "hi")
        XCTAssertEqual(ControlCall.decode(request).map(\.immediateSend), .success(p), "no wait: batchable")
    }

    func testASendThatWaitsIsNotBatched() throws {
        let request = JSONRPCRequest(
            id: .number(1), method: ControlMethod.messagesSend,
            params: ["to": .string("bob"), "body": .string("hi"), "wait": .bool(true)])
        let call = try ControlCall.decode(request).get()
        XCTAssertNil(call.immediateSend)
    }

    func testUnknownMethodAndBadParamsAreTheirOwnErrors() {
        let unknown = JSONRPCRequest(id: .number(1), method: "messages.sendd")
        XCTAssertEqual(ControlCall.decode(unknown).errorCode, ControlErrorCode.methodNotFound.rawValue)
        let typo = JSONRPCRequest(
            id: .number(2), method: ControlMethod.messagesSend,
            params: ["to": .string("bob"), "bdy": .string("hi")])
        XCTAssertEqual(ControlCall.decode(typo).errorCode, ControlErrorCode.invalidParams.rawValue)
        let missing = JSONRPCRequest(id: .number(3), method: ControlMethod.peersConnect)
        XCTAssertEqual(ControlCall.decode(missing).errorCode, ControlErrorCode.invalidParams.rawValue)
    }

    /// Failures that are not the node's own say what failed, never "could not store the message".
    func testControlFailuresKeepTheirOwnMessage() {
        let store = StoreError.io(path: "/var/lib/parley/parley.sqlite", reason: "disk I/O error")
        let cases: [(ControlFailure, String)] = [
            (.storeRead(what: "the peers", store), "could not read the peers from the store"),
            (.markRead(room: "#lab", store), "could not mark #lab read"),
            (.keyNotRotated(reason: "no space left"), "could not rotate the Noise key, the old key stays in use"),
            (.cardNotReissued(reason: "disk I/O error"), "the new Noise key is in use, but the card")
        ]
        for (failure, prefix) in cases {
            XCTAssertTrue(failure.description.hasPrefix(prefix), failure.description)
            XCTAssertFalse(failure.description.contains("could not store the message"))
        }
        XCTAssertTrue(
            ControlFailure.storeRead(what: "the peers", store).description.contains("disk I/O error"),
            "the cause is kept")
    }
}

private extension Result where Failure == JSONRPCError {
    var errorCode: Int? { if case .failure(let e) = self { return e.code } else { return nil } }
}
