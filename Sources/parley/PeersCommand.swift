import ArgumentParser
import ParleyControlProtocol

/// `parley peers`: known peers as a table, with loud notices for changed keys.
struct PeersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peers", abstract: "List known peers: fingerprint, online state, trust, queued and unread messages.")

    /// Widest name shown in the table; longer names are cut with "…" (JSON has them whole).
    static let maxNameColumn = 24

    @OptionGroup var options: ConnectionOptions

    func run() throws {
        try Session.run(options) { client in
            let list = try client.call(PeersListParams())
            if options.json { return Console.json(list) }
            guard !list.peers.isEmpty else {
                Console.out("No known peers yet. Peers on the LAN appear by themselves when mDNS is on; "
                    + "otherwise run `parley connect HOST:PORT`.")
                return
            }
            var rows = [["NAME", "FINGERPRINT", "STATUS", "TRUST", "QUEUED", "UNREAD"]]
            for peer in list.peers {
                rows.append([
                    HumanFormat.truncated(Terminal.line(peer.name), to: Self.maxNameColumn),
                    Terminal.line(peer.fingerprint),
                    peer.online ? "online" : "offline",
                    peer.trust == .changed ? "KEY CHANGED" : peer.trust.rawValue,
                    String(peer.queued),
                    String(peer.unread),
                ])
            }
            HumanFormat.table(rows).forEach(Console.out)
            for peer in list.peers where peer.trust == .changed {
                Console.out("")
                HumanFormat.keyChangedNotice(
                    name: peer.name, oldFingerprint: peer.fingerprint,
                    newFingerprint: peer.keyChange?.newFingerprint ?? "(unknown)",
                    safetyNumber: peer.safetyNumber, selector: peer.fingerprint
                ).forEach(Console.out)
            }
        }
    }
}
