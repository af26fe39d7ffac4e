import CSodium

/// BLAKE2b-256 (libsodium `crypto_generichash`, no key), the hash of the file protocol: per
/// chunk, and over the chunk hash list, whose hash is the file's hash (a two-level hash
/// tree, docs/PROTOCOL.md "Files"), fed piece by piece.
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

    /// The file's hash (`contentHash`, which is `listHash`) of the data `read` gives: `read`
    /// fills the buffer from the offset and returns how many bytes it wrote (0 at the end).
    /// `parley files hash` and the sender compute the same value.
    public static func ofFile(
        size: UInt64, chunkSize: Int, read: (UnsafeMutableRawBufferPointer, UInt64) throws -> Int
    ) rethrows -> (chunkHashes: [[UInt8]], fileHash: [UInt8])? {
        var hashes: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: chunkSize)
        var offset: UInt64 = 0
        while offset < size {
            let length = Int(min(UInt64(chunkSize), size - offset))
            var filled = 0
            while filled < length {
                let n = try buffer.withUnsafeMutableBytes {
                    try read(UnsafeMutableRawBufferPointer(rebasing: $0[filled..<length]), offset + UInt64(filled))
                }
                guard n > 0 else { return nil }
                filled += n
            }
            hashes.append(buffer.withUnsafeBytes { of(UnsafeRawBufferPointer(rebasing: $0[0..<length])) })
            offset += UInt64(length)
        }
        return (hashes, listHash(hashes))
    }

    /// `listHash`: the hash of the concatenated chunk hashes.
    public static func listHash(_ chunkHashes: [[UInt8]]) -> [UInt8] {
        let h = FileHash()
        for c in chunkHashes { h.update(c) }
        return h.finish()
    }
}
