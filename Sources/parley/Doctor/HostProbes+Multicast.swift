import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The socket side of `MulticastQuery`: one query per multicast-capable interface (IPv4 to
/// 224.0.0.251, IPv6 to ff02::fb where the interface has an IPv6 address), one retry, then
/// unicast answers read for at most `MulticastQuery.waitMs`. It sends one multicast packet
/// per interface and attempt: never run it in tests outside the lab's namespaces.
extension HostProbes {
    /// An interface the query can go out on.
    struct MulticastInterface {
        var name: String
        var index: UInt32
        /// Its IPv4 addresses (network byte order), for IP_MULTICAST_IF.
        var v4: [in_addr]
        var hasV6: Bool
    }

    static func queryMulticast(ownAddresses: [String]) -> MulticastQueryOutcome {
        let interfaces = multicastInterfaces()
        guard !interfaces.isEmpty else { return .notSent("no up interface with multicast but loopback") }
        let v4 = makeSocket(family: AF_INET)
        let v6 = interfaces.contains(where: \.hasV6) ? makeSocket(family: AF_INET6) : -1
        defer {
            if v4 >= 0 { close(v4) }
            if v6 >= 0 { close(v6) }
        }
        guard v4 >= 0 || v6 >= 0 else { return .notSent("cannot open a UDP socket (errno \(errno))") }
        let id = UInt16.random(in: 1...UInt16.max)
        let packet = MulticastQuery.query(id: id)

        var refused = 0
        func sendAll() -> Int {
            var sent = 0
            func count(_ ok: Bool) {
                if ok {
                    sent += 1
                } else if errno == EPERM || errno == EACCES {
                    refused += 1
                }
            }
            for i in interfaces {
                if v4 >= 0 {
                    for a in i.v4 { count(sendV4(v4, packet, via: a)) }
                }
                if v6 >= 0, i.hasV6 { count(sendV6(v6, packet, via: i.index)) }
            }
            return sent
        }
        guard sendAll() > 0 else {
            // EPERM on sendto: a local firewall rule dropped the packet on its way out.
            if refused > 0 { return .refusedHere(interfaces: interfaces.map(\.name)) }
            return .notSent("sending to the mDNS group failed (\(String(cString: strerror(errno))))")
        }

        let own = Set(ownAddresses)
        var peers: [String] = []
        var ownAnswered = false
        var read = 0
        var retried = false
        let start = DispatchTime.now().uptimeNanoseconds
        var buffer = [UInt8](repeating: 0, count: MulticastQuery.maxPacketBytes)
        while peers.isEmpty, read < MulticastQuery.maxPacketsRead {
            let elapsedMs = Int((DispatchTime.now().uptimeNanoseconds - start) / 1_000_000)
            if elapsedMs >= MulticastQuery.waitMs { break }
            if !retried, elapsedMs >= MulticastQuery.retryAfterMs {
                retried = true
                _ = sendAll()
            }
            let until = retried ? MulticastQuery.waitMs : MulticastQuery.retryAfterMs
            var fds = [v4, v6].filter { $0 >= 0 }.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(max(1, until - elapsedMs)))
            if ready <= 0 { continue }
            for p in fds where p.revents & Int16(POLLIN) != 0 {
                var from = sockaddr_storage()
                var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let n = withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(p.fd, &buffer, buffer.count, 0, $0, &len)
                    }
                }
                guard n >= 0 else { continue }
                read += 1
                guard MulticastQuery.judge(Array(buffer[0..<n]), id: id) == nil,
                    let source = numericHost(&from, len)
                else { continue }
                if own.contains(source) {
                    ownAnswered = true
                } else if !peers.contains(source) {
                    peers.append(source)
                }
            }
        }
        let names = interfaces.map(\.name)
        return peers.isEmpty ? .unanswered(ownAnswered: ownAnswered, interfaces: names) : .answered(by: peers)
    }

    /// Up, multicast-capable, non-loopback interfaces with their addresses.
    static func multicastInterfaces() -> [MulticastInterface] {
        var out: [MulticastInterface] = []
        forEachInterfaceAddress { name, flags, sa, family in
            guard flags & UInt32(IFF_UP) != 0, flags & UInt32(IFF_MULTICAST) != 0, flags & UInt32(IFF_LOOPBACK) == 0
            else { return }
            var entry =
                out.first { $0.name == name }
                ?? MulticastInterface(name: name, index: if_nametoindex(name), v4: [], hasV6: false)
            if family == AF_INET {
                entry.v4.append(sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr })
            } else {
                entry.hasV6 = true
            }
            if let at = out.firstIndex(where: { $0.name == name }) { out[at] = entry } else { out.append(entry) }
        }
        return out
    }

    /// A UDP socket on an ephemeral port (legacy unicast: not 5353), TTL/hops 255 as mDNS
    /// requires (RFC 6762 §11: responders may ignore other values); -1 on failure.
    static func makeSocket(family: Int32) -> Int32 {
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var ttl: Int32 = 255
        var ok: Int32
        if family == AF_INET {
            var any = sockaddr_in()
            any.sin_family = sa_family_t(AF_INET)
            ok = withUnsafePointer(to: &any) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            if ok == 0 { ok = setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_TTL, &ttl, 4) }
        } else {
            var only: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &only, 4)
            var any = sockaddr_in6()
            any.sin6_family = sa_family_t(AF_INET6)
            ok = withUnsafePointer(to: &any) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
            if ok == 0 { ok = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_MULTICAST_HOPS, &ttl, 4) }
        }
        if ok != 0 {
            close(fd)
            return -1
        }
        return fd
    }

    static func sendV4(_ fd: Int32, _ packet: [UInt8], via address: in_addr) -> Bool {
        var a = address
        guard setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &a, socklen_t(MemoryLayout<in_addr>.size)) == 0
        else { return false }
        var to = sockaddr_in()
        to.sin_family = sa_family_t(AF_INET)
        to.sin_port = MulticastQuery.port.bigEndian
        inet_pton(AF_INET, MulticastQuery.groupV4, &to.sin_addr)
        return withUnsafePointer(to: &to) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, packet, packet.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == packet.count
    }

    static func sendV6(_ fd: Int32, _ packet: [UInt8], via index: UInt32) -> Bool {
        var i = index
        guard setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_MULTICAST_IF, &i, 4) == 0 else { return false }
        var to = sockaddr_in6()
        to.sin6_family = sa_family_t(AF_INET6)
        to.sin6_port = MulticastQuery.port.bigEndian
        to.sin6_scope_id = index
        inet_pton(AF_INET6, MulticastQuery.groupV6, &to.sin6_addr)
        return withUnsafePointer(to: &to) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, packet, packet.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        } == packet.count
    }

    /// The numeric host of a source address, without an IPv6 zone (as `interfaceAddresses`).
    static func numericHost(_ from: inout sockaddr_storage, _ len: socklen_t) -> String? {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let ok = withUnsafePointer(to: &from) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, len, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST)
            }
        }
        guard ok == 0 else { return nil }
        var text = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if let pct = text.firstIndex(of: "%") { text = String(text[..<pct]) }
        return text
    }
}
