import CSodium

/// The one entry point to libsodium. Every other file in Parley that needs a
/// primitive goes through here or through the key types, never to another library.
public enum Sodium {
    /// `sodium_init` runs exactly once: Swift initialises a static `let` lazily and
    /// thread-safely, and libsodium itself tolerates repeated calls anyway.
    private static let initResult: Int32 = sodium_init()

    /// Call before any primitive. Failing to initialise libsodium means there is no
    /// safe randomness on this machine: a true invariant, so this traps.
    @inline(__always)
    public static func ensureInitialized() {
        precondition(initResult >= 0, "libsodium could not be initialised (sodium_init failed)")
    }

    /// `count` bytes from the system CSPRNG.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        ensureInitialized()
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return out
    }

    /// Uniform random integer in `0..<upperBound` (upperBound > 0).
    public static func randomUniform(_ upperBound: UInt32) -> UInt32 {
        ensureInitialized()
        return randombytes_uniform(upperBound)
    }

    /// Constant-time equality. Different lengths compare unequal (lengths are public).
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in
                sodium_memcmp(pa.baseAddress!, pb.baseAddress!, a.count) == 0
            }
        }
    }

    /// True when every byte is zero, in constant time.
    public static func isZero(_ a: [UInt8]) -> Bool {
        a.withUnsafeBytes { sodium_is_zero($0.bindMemory(to: UInt8.self).baseAddress, $0.count) == 1 }
    }

    /// Overwrite a buffer with zeros in a way the optimiser cannot elide.
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { buf in
            if let base = buf.baseAddress { sodium_memzero(base, buf.count) }
        }
    }

    /// Lower-case hex. Written straight into the string's storage: the identity and
    /// message-id conversions at the store boundary run several times per message
    /// (callgrind, docs/BENCHMARKS.md).
    public static func hex(_ bytes: [UInt8]) -> String {
        guard !bytes.isEmpty else { return "" }
        return String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            for (i, b) in bytes.enumerated() {
                out[2 * i] = hexDigit(b >> 4)
                out[2 * i + 1] = hexDigit(b & 0x0f)
            }
            return bytes.count * 2
        }
    }

    @inline(__always) private static func hexDigit(_ n: UInt8) -> UInt8 {
        n < 10 ? n &+ UInt8(ascii: "0") : n &+ (UInt8(ascii: "a") &- 10)
    }

    /// Parses hex (either case, no separators). Nil on any bad character or odd length.
    /// Reads the string's UTF-8 in place and writes the bytes into the array's storage.
    public static func fromHex(_ s: String) -> [UInt8]? {
        var s = s
        return s.withUTF8 { chars -> [UInt8]? in
            guard chars.count % 2 == 0 else { return nil }
            let count = chars.count / 2
            var valid = true
            let out = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                for i in 0..<count {
                    let hi = nibble(chars[2 * i])
                    let lo = nibble(chars[2 * i + 1])
                    guard hi < 16, lo < 16 else {
                        valid = false
                        initialized = i
                        return
                    }
                    buffer[i] = hi << 4 | lo
                }
                initialized = count
            }
            return valid ? out : nil
        }
    }

    /// The value of one hex digit, or 0xFF.
    @inline(__always) private static func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c &- UInt8(ascii: "A") &+ 10
        default: return 0xFF
        }
    }
}
