import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Reads the host's side of discovery for `parley doctor`, read-only: avahi, nsswitch,
/// firewall listings, interface addresses. Each probe is bounded in time and skips cleanly
/// when a tool is missing or not permitted. `HostFacts` is what the tests inject instead.
enum HostProbes {
    /// Seconds a probe command may take.
    static let commandTimeout: TimeInterval = 5

    /// `multicastQuery`: also send `MulticastQuery` (a multicast packet per interface).
    static func gather(
        multicastQuery: Bool, nsswitchPath: String = "/etc/nsswitch.conf",
        avahiConf: String = "/etc/avahi/avahi-daemon.conf"
    ) -> HostFacts {
        var facts = HostFacts(
            avahiRunning: nil, avahiInterfaces: nil, nsswitchHosts: nil, firewallRules: [], firewallUnreadable: [],
            interfaceAddresses: interfaceAddresses())
        if let avahi = which("avahi-daemon") {
            facts.avahiRunning = run(avahi, ["--check"])?.status == 0
        }
        if let conf = try? String(contentsOfFile: avahiConf, encoding: .utf8) {
            for line in conf.split(separator: "\n") where line.trimmingSpaces.hasPrefix("allow-interfaces=") {
                facts.avahiInterfaces = String(line.trimmingSpaces.dropFirst("allow-interfaces=".count))
            }
        }
        if let ns = try? String(contentsOfFile: nsswitchPath, encoding: .utf8) {
            facts.nsswitchHosts =
                ns.split(separator: "\n").first { $0.trimmingSpaces.hasPrefix("hosts:") }.map { String($0) } ?? ""
        }
        for (tool, args) in [("nft", ["list", "ruleset"]), ("iptables", ["-S"]), ("ufw", ["status"])] {
            guard let path = which(tool) else { continue }
            if let r = run(path, args), r.status == 0 {
                facts.firewallRules.append((tool: tool, text: r.output))
            } else {
                facts.firewallUnreadable.append(tool)
            }
        }
        if multicastQuery {
            // Loopback is ours too (a responder may answer from it).
            facts.multicastQuery = queryMulticast(ownAddresses: facts.interfaceAddresses + ["127.0.0.1", "::1"])
        }
        return facts
    }

    static func which(_ tool: String) -> String? {
        for dir in ["/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin"] {
            let p = dir + "/" + tool
            if access(p, X_OK) == 0 { return p }
        }
        return nil
    }

    /// Runs a command with no input, bounded in time; its stdout (at most 1 MiB) and status.
    static func run(_ path: String, _ args: [String]) -> (status: Int32, output: String)? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        do { try p.run() } catch { return nil }
        let deadline = Date().addingTimeInterval(commandTimeout)
        var data = Data()
        let reader = out.fileHandleForReading
        DispatchQueue.global().asyncAfter(deadline: .now() + commandTimeout) { if p.isRunning { p.terminate() } }
        data = reader.readDataToEndOfFile()
        p.waitUntilExit()
        _ = deadline
        return (p.terminationStatus, String(decoding: data.prefix(1 << 20), as: UTF8.self))
    }

    /// Calls `body` with every IPv4 and IPv6 address of this host's interfaces (getifaddrs),
    /// with the interface's name and flags and the address's family.
    static func forEachInterfaceAddress(
        _ body: (_ name: String, _ flags: UInt32, _ address: UnsafeMutablePointer<sockaddr>, _ family: Int32) -> Void
    ) {
        var ifap: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&ifap) == 0, let first = ifap else { return }
        defer { freeifaddrs(ifap) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let ifa = cursor {
            defer { cursor = ifa.pointee.ifa_next }
            guard let sa = ifa.pointee.ifa_addr else { continue }
            let family = Int32(sa.pointee.sa_family)
            guard family == AF_INET || family == AF_INET6 else { continue }
            body(String(cString: ifa.pointee.ifa_name), ifa.pointee.ifa_flags, sa, family)
        }
    }

    static func interfaceAddresses() -> [String] {
        var out: [String] = []
        forEachInterfaceAddress { _, _, sa, family in
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            let len = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
            guard getnameinfo(sa, len, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { return }
            var text = String(cString: host)
            if let pct = text.firstIndex(of: "%") { text = String(text[..<pct]) }
            if text.hasPrefix("127.") || text == "::1" { return }
            if !out.contains(text) { out.append(text) }
        }
        return out
    }
}
