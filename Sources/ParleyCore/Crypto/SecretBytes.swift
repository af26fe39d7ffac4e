import CSodium

/// A secret held in memory that is wiped when the last reference goes away.
///
/// Immutable after creation, so sharing it across threads is safe. Swift arrays
/// may be copied behind our back, so secrets live here instead: locked memory where the
/// OS allows (best effort: keeps it out of swap), zeroed with `sodium_memzero` on deinit.
/// Small secrets take a slot of `LockedSlots` (no system call); larger ones get their own
/// `mlock`ed buffer.
public final class SecretBytes: @unchecked Sendable {
    private let base: UnsafeMutableRawPointer
    private let allocated: Int
    private let inSlot: Bool
    public let count: Int

    /// Fills a new secret of `count` bytes by calling `fill` on its zeroed storage.
    public init(count: Int, fill: (UnsafeMutablePointer<UInt8>) -> Void) {
        Sodium.ensureInitialized()
        self.count = count
        if count <= LockedSlots.slotSize {
            self.allocated = LockedSlots.slotSize
            self.inSlot = true
            self.base = LockedSlots.shared.take()
        } else {
            self.allocated = count
            self.inSlot = false
            self.base = UnsafeMutableRawPointer.allocate(byteCount: allocated, alignment: 16)
            _ = sodium_mlock(base, allocated)
        }
        sodium_memzero(base, allocated)
        fill(base.assumingMemoryBound(to: UInt8.self))
    }

    /// Takes a copy of `bytes` and wipes the caller's array.
    public convenience init(consuming bytes: inout [UInt8]) {
        let n = bytes.count
        self.init(count: n) { dst in
            bytes.withUnsafeBytes { src in
                if n > 0 { UnsafeMutableRawPointer(dst).copyMemory(from: src.baseAddress!, byteCount: n) }
            }
        }
        Sodium.wipe(&bytes)
    }

    /// Random secret from the CSPRNG.
    public static func random(_ count: Int) -> SecretBytes {
        SecretBytes(count: count) { randombytes_buf($0, count) }
    }

    /// Borrow the bytes. Do not let the pointer escape.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Pointer for passing to libsodium inside a `withUnsafeBytes`-like scope.
    @inline(__always)
    func withPointer<R>(_ body: (UnsafePointer<UInt8>) throws -> R) rethrows -> R {
        try body(UnsafePointer(base.assumingMemoryBound(to: UInt8.self)))
    }

    /// A copy as an array: only for code that wipes it afterwards (tests, key files).
    public func copyBytes() -> [UInt8] { Array(UnsafeRawBufferPointer(start: base, count: count)) }

    /// Constant-time comparison with another secret.
    public func constantTimeEquals(_ other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        if count == 0 { return true }
        return sodium_memcmp(base, other.base, count) == 0
    }

    deinit {
        sodium_memzero(base, allocated)
        if inSlot {
            LockedSlots.shared.give(back: base)
        } else {
            _ = sodium_munlock(base, allocated)
            base.deallocate()
        }
    }
}
