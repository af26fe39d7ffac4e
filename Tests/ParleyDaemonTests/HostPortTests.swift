import ParleyControlProtocol
import XCTest

final class HostPortTests: XCTestCase {
    func testAcceptedForms() throws {
        let cases: [(String, String, UInt16, HostPort.Kind)] = [
            ("0.0.0.0:7744", "0.0.0.0", 7744, .ipv4),
            ("192.168.1.20:1", "192.168.1.20", 1, .ipv4),
            ("[::]:7744", "::", 7744, .ipv6),
            ("[::1]:0", "::1", 0, .ipv6),
            ("[fe80::1%eth0]:7744", "fe80::1%eth0", 7744, .ipv6),
            ("[fd00::20]:65535", "fd00::20", 65535, .ipv6),
            ("alice.local:7744", "alice.local", 7744, .hostName),
            ("localhost:80", "localhost", 80, .hostName),
            ("bob-desktop.lan.:7744", "bob-desktop.lan.", 7744, .hostName),
            ("my_host:7744", "my_host", 7744, .hostName)
        ]
        for (text, host, port, kind) in cases {
            let parsed = try HostPort(parsing: text)
            XCTAssertEqual(parsed.host, host, text)
            XCTAssertEqual(parsed.port, port, text)
            XCTAssertEqual(parsed.kind, kind, text)
            XCTAssertEqual(parsed.description, text, "round trip of \(text)")
        }
    }

    func testRejectedFormsHaveSpecificErrors() {
        let cases: [(String, HostPortError)] = [
            ("", .empty),
            ("alice", .missingPort("alice")),
            ("alice:", .missingPort("alice:")),
            (":7744", .missingHost(":7744")),
            ("[::1]", .missingPort("[::1]")),
            ("[::1]7744", .missingPort("[::1]7744")),
            ("[::1:7744", .unterminatedBracket("[::1:7744")),
            ("::1:7744", .unbracketedIPv6("::1:7744")),
            ("alice:http", .invalidPort("http")),
            ("alice:-1", .invalidPort("-1")),
            ("alice:+80", .invalidPort("+80")),
            ("alice:123456", .invalidPort("123456")),
            ("alice:65536", .portOutOfRange("65536")),
            ("alice:99999", .portOutOfRange("99999")),
            ("256.1.1.1:80", .invalidIPv4("256.1.1.1")),
            ("1.2.3:80", .invalidIPv4("1.2.3")),
            ("[1.2.3.4]:80", .invalidIPv6("1.2.3.4")),
            ("[::g]:80", .invalidIPv6("::g")),
            ("[fe80::1%]:80", .invalidIPv6("fe80::1%")),
            ("[fe80::1%eth0 x]:80", .invalidIPv6("fe80::1%eth0 x")),
            ("-alice:80", .invalidHostName("-alice")),
            ("a..b:80", .invalidHostName("a..b")),
            ("al ice:80", .invalidHostName("al ice")),
            ("älice:80", .invalidHostName("älice")),
            ("\(String(repeating: "a", count: 64)):80", .invalidHostName(String(repeating: "a", count: 64))),
            ("[::1\u{0}x]:80", .invalidHostName("::1\u{0}x")),
            (String(repeating: "a", count: 301), .tooLong(limit: HostPort.maxTextLength))
        ]
        for (text, expected) in cases {
            XCTAssertThrowsError(try HostPort(parsing: text), text.debugDescription) { error in
                XCTAssertEqual(error as? HostPortError, expected, text.debugDescription)
            }
        }
    }

    func testErrorDescriptionsAreActionable() {
        XCTAssertEqual(
            HostPortError.unbracketedIPv6("::1:7744").description,
            "IPv6 addresses must be in brackets, like [::1]:7744 (got \"::1:7744\")")
        XCTAssertEqual(HostPortError.portOutOfRange("70000").description, "port 70000 is out of range (0...65535)")
        // Hostile text is escaped, never printed raw.
        XCTAssertEqual(HostPortError.invalidHostName("a\nb").description.contains("\n"), false)
    }

    func testLosslessStringConvertible() {
        XCTAssertEqual(HostPort("[::]:7744")?.port, 7744)
        XCTAssertNil(HostPort("nonsense"))
    }
}
