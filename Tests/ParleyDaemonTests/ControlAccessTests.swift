import XCTest

@testable import ParleyDaemon

final class ControlAccessTests: XCTestCase {
    let daemonUID: UInt32 = 990
    let daemonGID: UInt32 = 990

    private func allows(uid: UInt32, gid: UInt32, groups: [UInt32]?) -> Bool {
        ControlAccess.allows(.init(uid: uid, gid: gid, groups: groups), daemonUID: daemonUID, daemonGID: daemonGID)
    }

    func testRootTheDaemonsUserAndItsGroupMayConnect() {
        XCTAssertTrue(allows(uid: 0, gid: 0, groups: []))
        XCTAssertTrue(allows(uid: 990, gid: 5, groups: []))
        XCTAssertTrue(allows(uid: 1000, gid: 990, groups: nil), "primary group")
        XCTAssertTrue(allows(uid: 1000, gid: 1000, groups: [27, 990]), "a supplementary group the process holds")
    }

    func testOthersAreRefusedWhateverEtcGroupSays() {
        XCTAssertFalse(allows(uid: 1000, gid: 1000, groups: [27, 100]))
        XCTAssertFalse(allows(uid: 1000, gid: 1000, groups: nil), "groups unknown: refused")
        XCTAssertFalse(allows(uid: 1000, gid: 1000, groups: []))
    }

    func testGroupsAreReadFromProcStatus() {
        let status = "Name:\tparley\nUmask:\t0022\nGid:\t1000\t1000\t1000\t1000\nGroups:\t27 990 1000 \nNSpid:\t42\n"
        XCTAssertEqual(ControlAccess.supplementaryGroups(procStatus: status), [27, 990, 1000])
        XCTAssertEqual(ControlAccess.supplementaryGroups(procStatus: "Groups:\t\n"), [])
        XCTAssertNil(ControlAccess.supplementaryGroups(procStatus: "Name:\tx\n"))
        XCTAssertNil(ControlAccess.supplementaryGroups(procStatus: "Groups:\t27 x\n"), "garbage is not a group list")
    }

    func testTheRefusalSaysWhatToDo() {
        let text = ControlAccess.refusal(groupName: "parley", daemonGID: daemonGID)
        XCTAssertTrue(text.contains("you are not in group parley: sudo usermod -aG parley $USER, then log in again"))
        // Joining is not the only way, and says what it means.
        XCTAssertTrue(text.contains("shares this one Parley identity and reads all of its messages"), text)
        XCTAssertTrue(text.contains("parleyd@$USER"), text)
        XCTAssertTrue(ControlAccess.refusal(groupName: nil, daemonGID: 990).contains("group 990"))
    }
}

/// A person's own instance (socket directory 0700): its group is not let in.
final class OwnerOnlyControlAccessTests: XCTestCase {
    func testOnlyTheOwnerAndRootMayConnectWhenTheGroupIsNotLetIn() {
        let rule = ControlAccess.Rule(daemonUID: 1001, daemonGID: 100, groupMayConnect: false)
        XCTAssertTrue(ControlAccess.allows(.init(uid: 1001, gid: 100, groups: []), rule: rule))
        XCTAssertTrue(ControlAccess.allows(.init(uid: 0, gid: 0, groups: []), rule: rule))
        XCTAssertFalse(
            ControlAccess.allows(.init(uid: 1002, gid: 100, groups: [100]), rule: rule),
            "another person who shares the primary group (e.g. users)")
        var open = rule
        open.groupMayConnect = true
        XCTAssertTrue(ControlAccess.allows(.init(uid: 1002, gid: 100, groups: [100]), rule: open))
    }
}
