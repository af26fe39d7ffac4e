import CSodium
import Synchronization

/// Page-locked memory for small secrets (keys, chaining keys, DH results, HKDF outputs):
/// fixed-size slots carved out of regions that are `mlock`ed once, so creating a secret
/// costs no system call.
///
/// Why: `SecretBytes` used to `mlock` and `munlock` its own buffer. Each of those calls
/// splits and re-merges the kernel's memory map, and a Noise handshake creates a few
/// dozen secrets, so the calls were a large share of a handshake's CPU time
/// (docs/BENCHMARKS.md, row 2). Regions are never returned: their number is bounded by
/// the most small secrets alive at once (a few per session), and a slot is zeroed by
/// its `SecretBytes` before it is reused.
final class LockedSlots: Sendable {
    static let shared = LockedSlots()
    /// Large enough for every fixed-size secret in the protocol (32-byte keys, 64-byte
    /// Ed25519 secret keys); bigger secrets get their own locked allocation.
    static let slotSize = 64
    /// 64 KiB per region: one `mlock` for 1,024 secrets.
    static let slotsPerRegion = 1_024
    static let pageSize = 4_096

    /// Addresses of free slots.
    private let free = Mutex<[UInt]>([])

    /// A zeroed slot of `slotSize` bytes.
    func take() -> UnsafeMutableRawPointer {
        let address = free.withLock { list -> UInt in
            if list.isEmpty { list = Self.newRegion() }
            return list.removeLast()
        }
        // Safe: every address in the list came from `newRegion` (non-null, never freed).
        return UnsafeMutableRawPointer(bitPattern: address)!
    }

    /// Returns a slot; the caller has already wiped it.
    func give(back slot: UnsafeMutableRawPointer) {
        let address = UInt(bitPattern: slot)
        free.withLock { $0.append(address) }
    }

    private static func newRegion() -> [UInt] {
        let bytes = slotSize * slotsPerRegion
        let region = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: pageSize)
        // Best effort, as before: without the privilege or the rlimit, secrets are still
        // wiped, only not kept out of swap.
        _ = sodium_mlock(region, bytes)
        sodium_memzero(region, bytes)
        let start = UInt(bitPattern: region)
        return (0..<slotsPerRegion).reversed().map { start + UInt($0 * slotSize) }
    }
}
