#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The ancillary ("control") data of a `sendmsg`/`recvmsg` that carries open file
/// descriptors (`SCM_RIGHTS`, unix(7)), encoded and decoded byte by byte: the `CMSG_*`
/// macros are not available from Swift, and a hand-written walk over bytes the kernel
/// filled in is easy to test on its own (DescriptorRightsTests). Pure: no system calls.
///
/// Layout (Linux, any word size): a `struct cmsghdr` (`cmsg_len` as a `size_t`, then
/// `cmsg_level` and `cmsg_type` as `int`s), then the data, each header and data aligned to
/// `size_t`. `cmsg_len` counts the header and the data, not the padding after it.
public enum DescriptorRights {
    /// Most descriptors one message carries. The largest legitimate request is
    /// `files.send` of one `parley send --attach` line; 16 files at once is more than a
    /// person attaches, and keeps a hostile client from filling the daemon's descriptor
    /// table (each received descriptor is open in the daemon until it is checked).
    public static let maxDescriptorsPerMessage = 16

    static let wordSize = MemoryLayout<Int>.size
    /// sizeof(struct cmsghdr): size_t + int + int, padded to size_t.
    static let headerSize = align(wordSize + 2 * MemoryLayout<Int32>.size)
    static let descriptorSize = MemoryLayout<Int32>.size

    static func align(_ n: Int) -> Int { (n + wordSize - 1) & ~(wordSize - 1) }

    /// CMSG_SPACE for `count` descriptors: the buffer `recvmsg` needs to receive them.
    public static func space(descriptors count: Int) -> Int { headerSize + align(count * descriptorSize) }

    /// The control bytes that attach `descriptors` to a `sendmsg` (empty for none).
    public static func encode(_ descriptors: [Int32]) -> [UInt8] {
        guard !descriptors.isEmpty else { return [] }
        var out = [UInt8](repeating: 0, count: space(descriptors: descriptors.count))
        let length = headerSize + descriptors.count * descriptorSize
        out.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: length, toByteOffset: 0, as: Int.self)
            raw.storeBytes(of: Int32(SOL_SOCKET), toByteOffset: wordSize, as: Int32.self)
            raw.storeBytes(of: Int32(SCM_RIGHTS), toByteOffset: wordSize + 4, as: Int32.self)
            for (i, fd) in descriptors.enumerated() {
                raw.storeBytes(of: fd, toByteOffset: headerSize + i * descriptorSize, as: Int32.self)
            }
        }
        return out
    }

    /// What a `recvmsg`'s control bytes held.
    public struct Decoded: Equatable, Sendable {
        /// Every descriptor received, in order: the receiver owns them all (and must close
        /// them, even when it refuses the message).
        public var descriptors: [Int32]
        /// Bytes that are not a well-formed sequence of headers: the message is refused
        /// (the descriptors found before the damage are still listed, to be closed).
        public var malformed: Bool

        public init(descriptors: [Int32], malformed: Bool) {
            self.descriptors = descriptors
            self.malformed = malformed
        }
    }

    /// Decodes the first `length` control bytes of a `recvmsg`. Messages of other types
    /// (credentials) are skipped; a header whose length runs past the end, or is shorter
    /// than a header, makes the rest unreadable (`malformed`).
    public static func decode(_ control: UnsafeRawBufferPointer, length: Int) -> Decoded {
        var result = Decoded(descriptors: [], malformed: false)
        let end = min(length, control.count)
        var offset = 0
        while offset + headerSize <= end {
            let cmsgLength = control.loadUnaligned(fromByteOffset: offset, as: Int.self)
            let level = control.loadUnaligned(fromByteOffset: offset + wordSize, as: Int32.self)
            let type = control.loadUnaligned(fromByteOffset: offset + wordSize + 4, as: Int32.self)
            guard cmsgLength >= headerSize, cmsgLength <= end - offset else {
                result.malformed = true
                return result
            }
            if level == Int32(SOL_SOCKET) && type == Int32(SCM_RIGHTS) {
                let count = (cmsgLength - headerSize) / descriptorSize
                for i in 0..<count {
                    result.descriptors.append(
                        control.loadUnaligned(fromByteOffset: offset + headerSize + i * descriptorSize, as: Int32.self))
                }
            }
            offset += align(cmsgLength)
        }
        // Trailing bytes too short for a header: the kernel never writes these.
        if offset < end { result.malformed = true }
        return result
    }

    /// `decode` for a byte array (tests, and callers that copied the buffer).
    public static func decode(_ control: [UInt8]) -> Decoded {
        control.withUnsafeBytes { decode($0, length: $0.count) }
    }
}
