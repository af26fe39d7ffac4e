#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One `sendmsg`/`recvmsg` on a Unix stream socket with descriptors attached
/// (`SCM_RIGHTS`, docs/CONTROL.md "Descriptor socket"). The system calls only; the
/// control bytes are `DescriptorRights`. Used by `ControlClient` and by the daemon's
/// `DescriptorServer`, so both sides put descriptors in the same place.
public enum DescriptorMessage {
    public struct Received {
        public var bytes: [UInt8]
        /// Open descriptors now owned by the receiver (received with close-on-exec set).
        public var descriptors: [Int32]
        /// The kernel dropped descriptors (MSG_CTRUNC: more than fitted) or the control
        /// bytes were malformed: the message must be refused.
        public var descriptorsLost: Bool
    }

    /// Sends `bytes` with `descriptors` attached to them (they arrive with the first of
    /// these bytes). Returns how many bytes went (possibly fewer: the caller sends the rest
    /// without descriptors), or -1 with errno set.
    public static func send(socket: Int32, bytes: ArraySlice<UInt8>, descriptors: [Int32], flags: Int32) -> Int {
        var control = DescriptorRights.encode(descriptors)
        return bytes.withUnsafeBytes { raw -> Int in
            var iov = iovec(iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress), iov_len: raw.count)
            return withUnsafeMutablePointer(to: &iov) { iovPointer -> Int in
                control.withUnsafeMutableBytes { controlRaw -> Int in
                    var message = msghdr()
                    message.msg_iov = iovPointer
                    message.msg_iovlen = 1
                    if !descriptors.isEmpty {
                        message.msg_control = controlRaw.baseAddress
                        message.msg_controllen = controlRaw.count
                    }
                    return sendmsg(socket, &message, flags)
                }
            }
        }
    }

    /// Receives up to `maxBytes` and up to `maxDescriptors` descriptors. nil with errno set
    /// on failure; an empty `bytes` without descriptors means the peer closed.
    public static func receive(socket: Int32, maxBytes: Int, maxDescriptors: Int, flags: Int32) -> Received? {
        var bytes = [UInt8](repeating: 0, count: maxBytes)
        // Room for one more than allowed, so that "too many" is seen (and closed) rather
        // than silently dropped by the kernel.
        var control = [UInt8](repeating: 0, count: DescriptorRights.space(descriptors: maxDescriptors + 1))
        var got = 0
        var controlLength = 0
        var truncated = false
        let ok = bytes.withUnsafeMutableBytes { raw -> Bool in
            var iov = iovec(iov_base: raw.baseAddress, iov_len: raw.count)
            return withUnsafeMutablePointer(to: &iov) { iovPointer -> Bool in
                control.withUnsafeMutableBytes { controlRaw -> Bool in
                    var message = msghdr()
                    message.msg_iov = iovPointer
                    message.msg_iovlen = 1
                    message.msg_control = controlRaw.baseAddress
                    message.msg_controllen = controlRaw.count
                    let n = recvmsg(socket, &message, flags | Int32(MSG_CMSG_CLOEXEC))
                    guard n >= 0 else { return false }
                    got = n
                    controlLength = Int(message.msg_controllen)
                    truncated = message.msg_flags & Int32(MSG_CTRUNC) != 0
                    return true
                }
            }
        }
        guard ok else { return nil }
        bytes.removeSubrange(got...)
        let decoded = control.withUnsafeBytes { DescriptorRights.decode($0, length: controlLength) }
        return Received(
            bytes: bytes, descriptors: decoded.descriptors,
            descriptorsLost: truncated || decoded.malformed || decoded.descriptors.count > maxDescriptors)
    }

    /// Closes every descriptor of a refused or finished message.
    public static func closeAll(_ descriptors: [Int32]) {
        for fd in descriptors where fd >= 0 { _ = close(fd) }
    }
}
