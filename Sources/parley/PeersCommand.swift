import ArgumentParser
import ParleyControlProtocol

/// `parley peers`: known peers as a table: trust state, and a marker where names look alike.
struct PeersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peers",
        abstract: "List known peers: fingerprint, online state, trust, queued and unread messages.")

    /// Widest name shown in the table; longer names are cut with "…" (JSON has them whole).
    static let maxNameColumn = 24

    @OptionGroup var options: ConnectionOptions

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
            var rows = [["NAME", "FINGERPRINT", "STATUS", "TRUST", "QUEUED", "UNREAD"]]
            for peer in list.peers {
                let clash = peer.nameClash == nil ? "" : " ⚠"
                rows.append([
                    HumanFormat.truncated(Terminal.line(peer.label), to: Self.maxNameColumn) + clash,
                    Terminal.line(peer.fingerprint),
                    peer.online ? "online" : "offline",
                    HumanFormat.trust(peer.trust),
                    String(peer.queued),
                    String(peer.unread)
                ])
            }
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
