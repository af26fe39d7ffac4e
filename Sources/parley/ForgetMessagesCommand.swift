import ArgumentParser
import ParleyControlProtocol

/// `parley forget-messages PEER`: delete the conversation with a peer, to make room when
/// the receive quota or the disk is full (issue 15).
struct ForgetMessagesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget-messages",
        abstract: "Delete every message to and from a peer (queued ones too); the peer itself stays.",
        discussion: """
            Makes room when the daemon refuses a peer's messages because its quota for the peer, \
            or the disk, is full. `parley export PEER` first keeps a copy.
            """)
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "The peer (nickname, name or fingerprint prefix).", completion: PeerCompletion.peers) var peer:
        String
    func validate() throws { try validateForCommandLine(MessagesForgetParams(peer: peer)) }
    func run() throws {
        try Session.run(options, peer: peer) { client in
            let r = try client.call(MessagesForgetParams(peer: peer))
            if options.json { return Console.json(r) }
            Console.out("deleted \(r.deleted) message\(r.deleted == 1 ? "" : "s") with \(Terminal.line(r.fingerprint))")
        }
    }
}
