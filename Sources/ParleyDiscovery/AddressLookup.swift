import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Resolves a DNS-SD host target ("h1.local") to numeric addresses with getaddrinfo.
///
/// getaddrinfo blocks (nss-mdns asks avahi-daemon, which may wait on the network), so it
/// runs on one dedicated serial queue: at most one thread is ever blocked in it, and the
/// discovery queue never is.
final class AddressLookup: Sendable {
    /// A host has more addresses than this only by mistake or malice; the daemon tries
    /// them in order, so the first few are what matters.
    static let maxAddresses = 16
    /// RFC 1035: a full domain name is at most 255 bytes; anything longer is not looked up.
    static let maxHostNameBytes = 255

    enum Outcome: Sendable, Equatable {
        case addresses([String])
        case failed(reason: String)
    }

    private let queue = DispatchQueue(label: "parley.discovery.getaddrinfo")

    /// Looks `host` up on the lookup queue and calls `completion` there.
    func lookup(_ host: String, completion: @escaping @Sendable (Outcome) -> Void) {
        queue.async { completion(Self.resolve(host)) }
    }

    /// Blocking. AF_UNSPEC: IPv4 and IPv6, in the order the system prefers.
    static func resolve(_ host: String) -> Outcome {
        guard !host.isEmpty, host.utf8.count <= maxHostNameBytes else {
            return .failed(reason: "host name is empty or longer than \(maxHostNameBytes) bytes")
        }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else { return .failed(reason: failureReason(host: host, status: status)) }
        defer { freeaddrinfo(list) }

        var addresses: [String] = []
        var entry = list
        while let ai = entry?.pointee, addresses.count < maxAddresses {
            entry = ai.ai_next
            guard let sa = ai.ai_addr else { continue }
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            guard getnameinfo(sa, ai.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else {
                continue
            }
            let address = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !addresses.contains(address) { addresses.append(address) }
        }
        guard !addresses.isEmpty else { return .failed(reason: "getaddrinfo(\(host)) returned no address") }
        return .addresses(addresses)
    }

    /// Says what to do, not just what failed: a `.local` name that does not resolve
    /// almost always means nss-mdns is missing from the hosts line of nsswitch.conf.
    static func failureReason(host: String, status: Int32) -> String {
        let what = "getaddrinfo(\(host)): \(String(cString: gai_strerror(status)))"
        guard host.hasSuffix(".local") else { return what }
        if !nsswitchHasMDNS() {
            return
                "\(what): .local names need nss-mdns: install libnss-mdns and add mdns4_minimal to the hosts line of /etc/nsswitch.conf"
        }
        return "\(what) (nss-mdns is configured; the peer may have just left, or avahi-daemon is not running here)"
    }

    /// Whether the hosts line of /etc/nsswitch.conf mentions an mdns module.
    static func nsswitchHasMDNS(path: String = "/etc/nsswitch.conf") -> Bool {
        guard let file = fopen(path, "r") else { return false }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 1024)  // nsswitch lines are short
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let trimmed = text.drop { $0 == " " || $0 == "\t" }
            if trimmed.hasPrefix("hosts:") { return trimmed.contains("mdns") }
        }
        return false
    }
}
