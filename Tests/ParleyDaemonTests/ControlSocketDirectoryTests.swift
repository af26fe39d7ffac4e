import XCTest

@testable import ParleyDaemon

#if canImport(Glibc)
    import Glibc
#endif

/// Where parleyd agrees to put its control socket: never where another user could put
/// their own socket first.
final class ControlSocketDirectoryTests: XCTestCase {
    private let me: uid_t = 1000

    func testTheDefaultsAndTheUnitsDirectoriesAreFine() {
        // $XDG_RUNTIME_DIR/parley and the state directory (0700, ours); /run/parley-user/NAME.
        XCTAssertNil(ControlSocketDirectory.problem(mode: S_IFDIR | 0o700, owner: me, daemonUID: me))
        // /run/parley of parleyd.service: 0750, owned by parley.
        XCTAssertNil(ControlSocketDirectory.problem(mode: S_IFDIR | 0o750, owner: me, daemonUID: me))
        // A directory of root's that only root writes (root made it for us).
        XCTAssertNil(ControlSocketDirectory.problem(mode: S_IFDIR | 0o755, owner: 0, daemonUID: me))
    }

    func testADirectoryOthersCanWriteIsRefusedStickyOrNot() throws {
        for mode: mode_t in [0o1777, 0o777, 0o770, 0o730, 0o703] {
            let problem = try XCTUnwrap(
                ControlSocketDirectory.problem(mode: S_IFDIR | mode, owner: me, daemonUID: me), "mode \(mode)")
            XCTAssertTrue(problem.contains("other users can write to it"), problem)
        }
        // /tmp itself: root's, sticky, world-writable.
        XCTAssertNotNil(ControlSocketDirectory.problem(mode: S_IFDIR | 0o1777, owner: 0, daemonUID: me))
    }

    func testADirectoryAnotherUserOwnsIsRefused() throws {
        let problem = try XCTUnwrap(ControlSocketDirectory.problem(mode: S_IFDIR | 0o755, owner: 1001, daemonUID: me))
        XCTAssertTrue(problem.contains("another user (uid 1001)"), problem)
    }
}

/// Whom the daemon serves besides its user and root: its group, only from a directory kept
/// for that group.
final class ControlSocketGroupTests: XCTestCase {
    func testTheGroupIsServedOnlyFromADirectoryKeptForIt() {
        XCTAssertTrue(ControlSocketDirectory.groupMayConnect(mode: S_IFDIR | 0o750), "/run/parley")
        XCTAssertTrue(ControlSocketDirectory.groupMayConnect(mode: S_IFDIR | 0o710))
        XCTAssertFalse(ControlSocketDirectory.groupMayConnect(mode: S_IFDIR | 0o700), "a person's own instance")
        // A home or a directory made with umask 022: everyone may search it, so it is no
        // grant to the owner's primary group (shared by every account on many hosts).
        XCTAssertFalse(ControlSocketDirectory.groupMayConnect(mode: S_IFDIR | 0o755))
        XCTAssertFalse(ControlSocketDirectory.groupMayConnect(mode: S_IFDIR | 0o711))
    }
}
