#if canImport(Glibc)
    import Glibc
#endif

/// The supplementary groups of the process at the other end of a Unix socket, from the
/// kernel (`SO_PEERGROUPS`, Linux 4.13): what it held when it connected. Preferred over
/// `/proc/PID/status`, which the hardened unit cannot read for other users' processes
/// (`ProtectProc=invisible` hides them), so a member of group parley was refused.
enum PeerGroups {
    /// SO_PEERGROUPS (asm-generic/socket.h); not exported by Swift's Glibc module.
    static let option: Int32 = 59
    /// Groups read at most; a caller with more falls back to /proc (ERANGE).
    static let maxGroups = 64

    /// The fixed-size buffer NIO's `unsafeGetSocketOption` fills (zeroed first, and the
    /// length the kernel wrote is not returned: slots left at 0 are unused, which is why
    /// gid 0 is never reported as a group; root's uid is admitted on its own).
    struct Buffer: Sendable {
        var slots: InlineArray<64, UInt32> = .init(repeating: 0)

        var groups: [UInt32] {
            var out: [UInt32] = []
            for i in 0..<slots.count where slots[i] != 0 { out.append(slots[i]) }
            return out
        }
    }

    /// From a raw socket descriptor (the descriptor socket): exact length, nil on failure.
    static func of(socket fd: Int32) -> [UInt32]? {
        var buffer = [UInt32](repeating: 0, count: maxGroups)
        var length = socklen_t(maxGroups * MemoryLayout<UInt32>.size)
        let rc = buffer.withUnsafeMutableBytes { getsockopt(fd, SOL_SOCKET, option, $0.baseAddress, &length) }
        guard rc == 0 else { return nil }
        return Array(buffer.prefix(Int(length) / MemoryLayout<UInt32>.size))
    }
}
