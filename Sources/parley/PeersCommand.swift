import ArgumentParser
import ParleyControlProtocol

/// `parley peers`: known peers as a table: trust state, and a marker where names look alike.
struct PeersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peers",
        abstract: "List known peers: fingerprint, online state, trust, queued and unread messages.")

    /// Widest name shown in the table; longer names are cut with "…" (JSON has them whole).
    static let maxNameColumn = 24

    /// Widest status line shown ("in a meeting until 3"); longer ones are cut with "…".
    static let maxPresenceColumn = 40

    @OptionGroup var options: ConnectionOptions

    /// The table: one row per peer under a header; the PRESENCE column (the status line an
    /// online peer set with `parley presence`) only when some peer has one.
    static func rows(_ peers: [PeerInfo]) -> [[String]] {
        let withPresence = peers.contains { $0.online && !($0.status ?? "").isEmpty }
        var rows = [["NAME", "FINGERPRINT", "STATUS", "TRUST", "QUEUED", "UNREAD"] + (withPresence ? ["PRESENCE"] : [])]
        for peer in peers {
            let clash = peer.nameClash == nil ? "" : " ⚠"
            var row = [
                HumanFormat.truncated(Terminal.line(peer.label), to: maxNameColumn) + clash,
                Terminal.line(peer.fingerprint),
                peer.online ? "online" : "offline",
                HumanFormat.trust(peer.trust),
                String(peer.queued),
                String(peer.unread)
            ]
            if withPresence {
                let presence = peer.online ? (peer.status ?? "") : ""
                row.append(HumanFormat.truncated(Terminal.line(presence), to: maxPresenceColumn))
            }
            rows.append(row)
        }
        return rows
    }

    func run() throws {
        try Session.run(options) { client in
            let list = try client.call(PeersListParams())
            if options.json { return Console.json(list) }
            guard !list.peers.isEmpty else {
                Console.out(
                    "No known peers yet. Peers on the LAN appear by themselves when mDNS is on; "
                        + "otherwise run `parley connect HOST:PORT`.")
                return
            }
            let rows = Self.rows(list.peers)
            HumanFormat.table(rows).forEach(Console.out)
            let clashing = list.peers.filter { $0.nameClash != nil }
            if !clashing.isEmpty {
                Console.out("")
                Console.out("⚠ Names look alike (a name is only a label a peer chose; the fingerprint says who it is):")
                for peer in clashing { Console.out("  " + HumanFormat.clashLine(peer)) }
                Console.out(
                    "  Send by fingerprint prefix, or give one a name of yours: parley trust nickname FINGERPRINT NAME")
            }
            for peer in list.peers where peer.trust == .pending {
                Console.out("")
                Console.out(
                    "New key awaiting your approval: \(Terminal.line(peer.label)) \(Terminal.line(peer.fingerprint)).")
                Console.out(
                    "  Compare `parley trust show \(Terminal.line(peer.fingerprint))` with its owner, then "
                        + "`parley trust accept \(Terminal.line(peer.fingerprint))` or `parley trust block \(Terminal.line(peer.fingerprint))`."
                )
            }
        }
    }
}
