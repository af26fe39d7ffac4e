import CDNSSD
import Dispatch
import XCTest

@testable import ParleyDiscovery

/// avahi's compat library leaves a DNSServiceRef's unused callback fields as whatever the
/// allocator returned, and calls the first non-NULL one when avahi-daemon goes away (see
/// CDNSSD/shim.h). MDNSDiscovery therefore makes avahi allocate zeroed memory. This checks
/// that on the allocator itself: memory is dirtied, freed and allocated again (glibc hands
/// the same chunk back), and must come back zeroed.
final class AvahiAllocatorTests: XCTestCase {
    func testAvahiAllocationsAreZeroedOnceDiscoveryExists() throws {
        _ = MDNSDiscovery(advertisement: nil, browse: false, queue: DispatchQueue(label: "test")) { _ in }
        XCTAssertTrue(MDNSDiscovery.zeroingAllocatorInstalled)
        // The size of a compat DNSServiceRef is about 300 bytes; try a few sizes around it.
        for size in [64, 256, 320, 512] {
            for _ in 0..<8 {
                guard let dirty = avahi_malloc(size) else { return XCTFail("avahi_malloc(\(size)) failed") }
                memset(dirty, 0xAB, size)
                avahi_free(dirty)
                guard let again = avahi_malloc(size) else { return XCTFail("avahi_malloc(\(size)) failed") }
                defer { avahi_free(again) }
                let bytes = UnsafeRawBufferPointer(start: again, count: size)
                XCTAssertTrue(bytes.allSatisfy { $0 == 0 }, "avahi_malloc(\(size)) returned memory that is not zeroed")
            }
        }
    }
}
