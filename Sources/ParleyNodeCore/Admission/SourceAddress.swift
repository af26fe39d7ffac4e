/// Where a connection comes from, as admission counts it: the address itself, and the
/// network it belongs to. For IPv6 that is the /64: one host (or one LAN) owns a whole /64
/// and can pick any address in it, so caps per address alone would let it hold every slot.
/// For IPv4 the network is the address (a host rarely has more than one).
public struct SourceAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address as text (IPv6 in its compressed form as the driver printed it).
    public let address: String
    /// The /64 of an IPv6 address ("2001:db8:1:2::/64"), or the IPv4 address itself.
    public let network: String

    public init(_ address: String) {
        self.address = address
        self.network = Self.network(of: address)
    }

    public var description: String { address }

    /// The first four 16-bit groups of an IPv6 address, or the address itself when it is
    /// not IPv6 (IPv4, IPv4-mapped IPv6 shown as IPv4, or text we cannot parse: it then
    /// counts as a network of its own, which is never looser than the address rule).
    static func network(of address: String) -> String {
        var text = Substring(address)
        if let zone = text.firstIndex(of: "%") { text = text[..<zone] }  // fe80::1%eth0
        guard text.contains(":") else { return address }
        if text.lowercased().hasPrefix("::ffff:"), text.contains(".") { return String(text.dropFirst(7)) }
        guard let groups = expand(text) else { return address }
        return groups.prefix(4).map { String($0, radix: 16) }.joined(separator: ":") + "::/64"
    }

    /// The eight groups of an IPv6 address in text form, or nil if it is not one. Handles
    /// `::` and a trailing dotted IPv4 part.
    static func expand(_ text: Substring) -> [UInt16]? {
        let gaps = text.ranges(of: "::")
        guard gaps.count <= 1 else { return nil }
        let halves =
            gaps.first.map { [String(text[..<$0.lowerBound]), String(text[$0.upperBound...])] } ?? [String(text)]
        func groups(_ part: String) -> [UInt16]? {
            if part.isEmpty { return [] }
            var out: [UInt16] = []
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            for (i, field) in fields.enumerated() {
                if i == fields.count - 1, field.contains(".") {
                    let octets = field.split(separator: ".").compactMap { UInt8($0) }
                    guard octets.count == 4 else { return nil }
                    out.append(UInt16(octets[0]) << 8 | UInt16(octets[1]))
                    out.append(UInt16(octets[2]) << 8 | UInt16(octets[3]))
                } else {
                    guard (1...4).contains(field.count), let v = UInt16(field, radix: 16) else { return nil }
                    out.append(v)
                }
            }
            return out
        }
        guard let head = groups(halves[0]) else { return nil }
        if halves.count == 1 { return head.count == 8 ? head : nil }
        guard let tail = groups(halves[1]), head.count + tail.count < 8 else { return nil }
        return head + [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
    }
}
