import ParleyCore
import XCTest

@testable import ParleyNodeCore

final class NameSkeletonTests: XCTestCase {
    func testLookAlikesShareASkeleton() {
        XCTAssertEqual(NameSkeleton.of("bob"), NameSkeleton.of("b\u{043E}b"), "Cyrillic о")
        XCTAssertEqual(NameSkeleton.of("bob"), NameSkeleton.of("Bob"), "case")
        XCTAssertEqual(NameSkeleton.of("alice"), NameSkeleton.of("aIice"), "capital I for l")
        XCTAssertEqual(NameSkeleton.of("modem"), NameSkeleton.of("rnodern"), "rn for m")
        XCTAssertEqual(NameSkeleton.of("bob"), NameSkeleton.of("ｂｏｂ"), "fullwidth")
        XCTAssertEqual(NameSkeleton.of("bob"), NameSkeleton.of("b\u{200B}ob"), "an invisible character adds nothing")
        XCTAssertEqual(NameSkeleton.of("José"), NameSkeleton.of("Jose\u{301}"), "normalization forms")
    }

    func testDifferentNamesStayDifferent() {
        XCTAssertNotEqual(NameSkeleton.of("bob"), NameSkeleton.of("rob"))
        XCTAssertNotEqual(NameSkeleton.of("alice"), NameSkeleton.of("alicia"))
        XCTAssertNotEqual(NameSkeleton.of("李雷"), NameSkeleton.of("韩梅梅"))
    }
}

final class NameClashesTests: XCTestCase {
    let bob = identity(2)
    let impostor = identity(3)
    let carol = identity(4)

    func testSameNameMarksBothPeers() {
        let clashes = NameClashes.find([
            .init(identity: bob, selfAssertedName: "bob"),
            .init(identity: impostor, selfAssertedName: "bob"),
            .init(identity: carol, selfAssertedName: "carol")
        ])
        XCTAssertEqual(clashes[bob], .init(kind: .sameName, with: [impostor]))
        XCTAssertEqual(clashes[impostor], .init(kind: .sameName, with: [bob]))
        XCTAssertNil(clashes[carol])
    }

    func testLookAlikeNamesAreMarkedConfusable() {
        let clashes = NameClashes.find([
            .init(identity: bob, selfAssertedName: "bob"),
            .init(identity: impostor, selfAssertedName: "b\u{043E}b")
        ])
        XCTAssertEqual(clashes[impostor]?.kind, .confusable)
        XCTAssertEqual(clashes[bob]?.with, [impostor])
    }

    func testANicknameWinsOverTheSelfAssertedName() {
        // The person named the real bob "Bob (lab)": what they see for him is unique, so he is
        // not marked; the impostor still claims a contact's name, so it stays marked.
        let clashes = NameClashes.find([
            .init(identity: bob, selfAssertedName: "bob", nickname: "Bob (lab)"),
            .init(identity: impostor, selfAssertedName: "bob")
        ])
        XCTAssertNil(clashes[bob])
        XCTAssertEqual(clashes[impostor], .init(kind: .sameName, with: [bob]))
        // A peer renaming itself to another's nickname is marked.
        let renamed = NameClashes.find([
            .init(identity: bob, selfAssertedName: "bob", nickname: "boss"),
            .init(identity: impostor, selfAssertedName: "boss")
        ])
        XCTAssertEqual(renamed[impostor]?.kind, .sameName)
    }

    func testAPeerCallingItselfByOurNameIsMarked() {
        let clashes = NameClashes.find([.init(identity: impostor, selfAssertedName: "alice")], myName: "alice")
        XCTAssertEqual(clashes[impostor], .init(kind: .sameName, with: []))
    }
}
