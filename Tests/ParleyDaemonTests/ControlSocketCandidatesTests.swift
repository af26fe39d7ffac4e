import ParleyControlProtocol
import XCTest

/// Where `parley` looks without flags (issue 28): the person's own daemon in their session,
/// then their own system-managed instance (parleyd@NAME), then the system service.
final class ControlSocketCandidatesTests: XCTestCase {
    func testAPersonsOwnInstanceComesBeforeTheSystemService() {
        let env = ["XDG_RUNTIME_DIR": "/run/user/1000", "HOME": "/home/alice"]
        XCTAssertEqual(
            ControlSocketPath.clientCandidates(environment: env, userName: "alice"),
            ["/run/user/1000/parley/control.sock", "/run/parley-user/alice/control.sock", "/run/parley/control.sock"])
        XCTAssertEqual(
            ControlSocketPath.forClient(environment: env, userName: "alice") {
                $0 == "/run/parley-user/alice/control.sock" || $0 == "/run/parley/control.sock"
            },
            "/run/parley-user/alice/control.sock")
    }

    func testNoUserNameOrAStrangeOneLeavesOnlyTheOthers() {
        let env = ["XDG_RUNTIME_DIR": "/run/user/1000"]
        for name in [nil, "", "../bob", ".."] as [String?] {
            XCTAssertEqual(
                ControlSocketPath.clientCandidates(environment: env, userName: name),
                ["/run/user/1000/parley/control.sock", "/run/parley/control.sock"])
        }
    }

    func testTheDescriptorSocketIsTheControlSocketsPathWithFds() {
        XCTAssertEqual(
            ControlSocketPath.descriptorSocket(forControl: "/run/parley/control.sock"), "/run/parley/control.sock.fds")
    }
}
