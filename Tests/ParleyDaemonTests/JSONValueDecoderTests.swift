import Foundation
import XCTest

@testable import ParleyControlProtocol

/// Decoding params straight from the parsed tree must give what Foundation's JSONDecoder
/// gives on the same text: the same value, or an error worded the same for the client.
final class JSONValueDecoderTests: XCTestCase {
    private struct Nested: Codable, Equatable {
        var name: String
        var tags: [String]
        var inner: Inner?
        var state: MessageState
        struct Inner: Codable, Equatable {
            var n: Int
            var flag: Bool?
        }
    }

    private func outcome<T: Decodable & Equatable>(_ type: T.Type, _ text: String, fast: Bool) -> String {
        do {
            let value: T
            if fast {
                value = try JSONValue(parsing: Array(text.utf8)).decode(as: T.self)
            } else {
                value = try JSONDecoder().decode(T.self, from: Data(text.utf8))
            }
            return "ok \(value)"
        } catch let e as DecodingError {
            return "error " + DecodingErrorDescription.describe(e)
        } catch {
            return "other \(error)"
        }
    }

    private func assertAgrees<T: Decodable & Equatable>(
        _ type: T.Type, _ texts: [String], file: StaticString = #filePath, line: UInt = #line
    ) {
        for text in texts {
            XCTAssertEqual(
                outcome(type, text, fast: true), outcome(type, text, fast: false), text, file: file, line: line)
        }
    }

    func testSendParamsAgreeWithFoundation() {
        assertAgrees(
            MessagesSendParams.self,
            [
                #"{"to":"bob","body":"hi"}"#, #"{"to":"bob","body":"hi","wait":true,"timeoutMs":5}"#,
                #"{"body":"hi"}"#, #"{"to":1,"body":"hi"}"#, #"{"to":null,"body":"hi"}"#, #"{"to":"b","body":["x"]}"#,
                #"{"to":"b","body":"x","wait":"yes"}"#, #"{"to":"b","body":"x","wait":null}"#,
                #"{"to":"b","body":"x","timeoutMs":"5"}"#, #"{"to":"b","body":"x","timeoutMs":2.0}"#,
                #"[]"#, #""str""#, #"null"#
            ])
    }

    /// Where Foundation only says "The given data was not valid JSON.", the client is told
    /// which field is wrong and why.
    func testNumbersThatAreNotIntegersNameTheField() {
        for text in [
            #"{"to":"b","body":"x","timeoutMs":1.5}"#, #"{"to":"b","body":"x","timeoutMs":10000000000000000000000}"#
        ] {
            let fast = outcome(MessagesSendParams.self, text, fast: true)
            XCTAssertTrue(fast.hasPrefix("error field \"timeoutMs\": Parsed JSON number <"), fast)
            XCTAssertTrue(fast.hasSuffix("> does not fit in Int."), fast)
        }
    }

    func testListParamsAgreeWithFoundation() {
        assertAgrees(
            MessagesListParams.self,
            [
                #"{}"#, #"{"peer":"bob","after":1,"before":9,"limit":3}"#, #"{"limit":-1}"#, #"{"after":"1"}"#,
                #"{"after":true}"#, #"{"limit":{}}"#
            ])
    }

    func testNestedTypesAgreeWithFoundation() {
        assertAgrees(
            Nested.self,
            [
                #"{"name":"a","tags":["x","y"],"inner":{"n":3},"state":"queued"}"#,
                #"{"name":"a","tags":["x",2],"state":"queued"}"#,
                #"{"name":"a","tags":[],"inner":{"n":"3"},"state":"queued"}"#,
                #"{"name":"a","tags":[],"inner":{"flag":true},"state":"queued"}"#,
                #"{"name":"a","tags":[],"inner":null,"state":"nope"}"#,
                #"{"name":"a","tags":{},"state":"queued"}"#,
                #"{"name":"a","tags":[null],"state":"queued"}"#
            ])
        assertAgrees([Int].self, ["[1,2,3]", "[1,\"2\"]", "[]", "{}"])
        assertAgrees([String: Int].self, [#"{"a":1}"#, #"{"a":"1"}"#, "[]"])
        assertAgrees(JSONValue.self, [#"{"a":[1,2.5,true,null,"s",{}]}"#])
    }
}
