import XCTest

@testable import ParleyDiscovery

/// The pure bookkeeping behind MDNSDiscovery: conflict names and browse sightings.
/// (The avahi side is tested for real in Tests/system/test_discovery_lab.py.)
final class DiscoveryBookkeepingTests: XCTestCase {
    func testAlternativeNamesFollowAvahiStyle() {
        XCTAssertEqual(InstanceName.alternative(to: "alice"), "alice #2")
        XCTAssertEqual(InstanceName.alternative(to: "alice #2"), "alice #3")
        XCTAssertEqual(InstanceName.alternative(to: "alice #9"), "alice #10")
        XCTAssertEqual(InstanceName.alternative(to: "alice#2"), "alice#2 #2")
        XCTAssertEqual(InstanceName.alternative(to: "alice #02"), "alice #02 #2")
        XCTAssertEqual(InstanceName.alternative(to: "alice #1"), "alice #1 #2")
        XCTAssertEqual(InstanceName.alternative(to: ""), " #2")
    }

    func testAlternativeNameStaysWithinLabelLimit() {
        let long = String(repeating: "é", count: 40)  // 80 bytes
        let alt = InstanceName.alternative(to: long)
        XCTAssertLessThanOrEqual(alt.utf8.count, ServiceAdvertisement.maxInstanceNameBytes)
        XCTAssertTrue(alt.hasSuffix(" #2"))
        XCTAssertEqual(InstanceName.alternative(to: alt).utf8.count, alt.utf8.count)
    }

    func testTruncationCutsAtCharacterBoundary() {
        XCTAssertEqual(InstanceName.truncated("abc", maxBytes: 63), "abc")
        XCTAssertEqual(InstanceName.truncated("aé", maxBytes: 2), "a")
        XCTAssertEqual(InstanceName.truncated(String(repeating: "x", count: 70)).utf8.count, 63)
    }

    func testInstanceIsPresentUntilLastSightingGoes() {
        var p = BrowsePresence()
        XCTAssertTrue(p.add("a", interface: 2))
        XCTAssertFalse(p.add("a", interface: 2), "same interface, other IP protocol")
        XCTAssertFalse(p.add("a", interface: 3))
        XCTAssertEqual(p.interfaces(of: "a"), [2, 3])
        XCTAssertFalse(p.remove("a", interface: 2))
        XCTAssertFalse(p.remove("a", interface: 2))
        XCTAssertEqual(p.interfaces(of: "a"), [3])
        XCTAssertTrue(p.remove("a", interface: 3))
        XCTAssertFalse(p.contains("a"))
        XCTAssertFalse(p.remove("a", interface: 3), "removing an unknown sighting changes nothing")
    }

    func testPresenceIsBounded() {
        var p = BrowsePresence()
        for i in 0..<BrowsePresence.maxInstances { XCTAssertTrue(p.add("n\(i)", interface: 1)) }
        XCTAssertFalse(p.add("one-too-many", interface: 1))
        XCTAssertFalse(p.contains("one-too-many"))
        XCTAssertTrue(p.remove("n0", interface: 1))
        XCTAssertTrue(p.add("one-too-many", interface: 1))
    }

    func testDurationToDispatchInterval() {
        XCTAssertEqual(MDNSDiscovery.dispatchInterval(.milliseconds(1500)), .nanoseconds(1_500_000_000))
        XCTAssertEqual(MDNSDiscovery.dispatchInterval(.seconds(-1)), .never)
    }
}
