import CSodium

/// BLAKE2b-256 (libsodium `crypto_generichash`, no key), the hash of the file protocol:
/// per chunk, over the chunk hash list, and over the whole file, fed piece by piece.
///
/// A class: libsodium's state wants 64-byte alignment (`CRYPTO_ALIGN(64)`), which a Swift
/// stored property of the imported struct does not promise, so it lives in its own
/// aligned allocation.
public final class FileHash {
    public static let length = 32
    private let state: UnsafeMutableRawPointer

    public init() {
        Sodium.ensureInitialized()
        state = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        _ = crypto_generichash_init(OpaquePointer(state), nil, 0, Self.length)
    }

    deinit { state.deallocate() }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = crypto_generichash_update(
            OpaquePointer(state), base.assumingMemoryBound(to: UInt8.self),
            UInt64(bytes.count))
    }

    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    public func finish() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Self.length)
        out.withUnsafeMutableBufferPointer {
            _ = crypto_generichash_final(
                OpaquePointer(state), $0.baseAddress!, Self.length)
        }
        return out
    }

    /// The hash of one buffer (one call, no state to align).
    public static func of(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: length)
        out.withUnsafeMutableBufferPointer { o in
            _ = crypto_generichash(
                o.baseAddress!, length, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count),
                nil, 0)
        }
        return out
    }

    public static func of(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBytes { of($0) } }

    /// `listHash`: the hash of the concatenated chunk hashes.
    public static func listHash(_ chunkHashes: [[UInt8]]) -> [UInt8] {
        let h = FileHash()
        for c in chunkHashes { h.update(c) }
        return h.finish()
    }
}
