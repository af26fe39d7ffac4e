import ArgumentParser
import ParleyControlProtocol

/// `parley trust`: a person's decisions about keys. A peer is its key; names are labels.
struct TrustCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Decide about keys: show, verify, replace a contact's key, accept, block, forget, nickname.",
        discussion: """
            A peer is its identity key; its name is only a label it chose. Compare the safety number of \
            `parley trust show PEER` with the person (in person or over a channel you trust) before you \
            verify a key or let it replace a contact's key.
            `parley trust PEER --fingerprint FP` is `parley trust verify PEER --fingerprint FP`.
            """,
        subcommands: [
            TrustVerifyCommand.self, TrustShowCommand.self, TrustReplaceCommand.self,
            TrustAcceptCommand.self, TrustBlockCommand.self, TrustUnblockCommand.self,
            TrustForgetCommand.self, TrustNicknameCommand.self
        ],
        defaultSubcommand: TrustVerifyCommand.self)
}

/// `parley trust [verify] PEER --fingerprint FP`.
struct TrustVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Mark a peer verified after comparing its whole fingerprint out of band.")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The peer (nickname, name or fingerprint prefix).", completion: PeerCompletion.peers)
    var peer: String

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The peer's whole fingerprint as read from its own device (`parley whoami` there); dashes and case ignored.",
            valueName: "fp"))
    var fingerprint: String

    func validate() throws { try validateForCommandLine(TrustVerifyParams(peer: peer, fingerprint: fingerprint)) }

    func run() throws {
        try Session.run(options, peer: peer) { client in
            let result = try client.call(TrustVerifyParams(peer: peer, fingerprint: fingerprint))
            if options.json { return Console.json(result) }
            Console.out("✓ \(Terminal.line(result.peer.label)) is verified (\(Terminal.line(result.peer.fingerprint)))")
        }
    }
}

/// `parley trust show PEER`: fingerprint, safety number with this key, QR text, history.
struct TrustShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show a key's fingerprint, the safety number computed with it, and its history.")

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The peer (nickname, name or fingerprint prefix).", completion: PeerCompletion.peers)
    var peer: String

    func validate() throws { try validateForCommandLine(TrustShowParams(peer: peer)) }

    func run() throws {
        try Session.run(options, peer: peer) { client in
            let r = try client.call(TrustShowParams(peer: peer))
            if options.json { return Console.json(r) }
            HumanFormat.trustShow(r).forEach(Console.out)
        }
    }
}

/// `parley trust replace OLD --new-fingerprint FP`: the contact reinstalled; its new key takes over.
struct TrustReplaceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replace",
        abstract:
            "Let a new key replace a contact's key (the contact reinstalled), naming the new key's whole fingerprint.",
        discussion: """
            First run `parley trust show NEW-FINGERPRINT` and compare its safety number with the contact. \
            Queued messages then move to the new key, and the old key is refused from then on.
            """)

    @OptionGroup var options: ConnectionOptions

    @Argument(
        help: "The contact whose key is replaced (nickname, name or fingerprint prefix of the OLD key).",
        completion: PeerCompletion.peers)
    var peer: String

    @Option(
        name: .customLong("new-fingerprint"),
        help: ArgumentHelp("The new key's whole fingerprint, as `parley trust show` prints it.", valueName: "fp"))
    var newFingerprint: String

    @Option(
        name: .customLong("safety-number"),
        help: ArgumentHelp(
            "The safety number the contact's new device shows (spaces allowed): the key is replaced only if it is "
                + "the one computed with the new key, as in parley web's confirmation window.",
            valueName: "digits"))
    var safetyNumber: String?

    var params: TrustReplaceParams {
        TrustReplaceParams(peer: peer, newFingerprint: newFingerprint, safetyNumber: safetyNumber)
    }

    func validate() throws {
        try validateForCommandLine(params)
    }

    func run() throws {
        try Session.run(options, peer: peer) { client in
            let r = try client.call(params)
            if options.json { return Console.json(r) }
            Console.out(
                "✓ \(Terminal.line(r.peer.label)) is now the key \(Terminal.line(r.peer.fingerprint)) (verified).")
            if r.retargeted > 0 {
                Console.out("\(HumanFormat.count(r.retargeted, "queued message")) will go to the new key.")
            }
        }
    }
}

/// One-peer trust actions share their shape: a selector in, the peer out.
protocol OnePeerTrustAction {
    associatedtype Params: ControlCallParams where Params.ResultType == TrustPeerResult
    static func params(_ peer: String) -> Params
    static func done(_ peer: PeerInfo) -> String
}

extension OnePeerTrustAction {
    static func run(_ options: ConnectionOptions, _ peer: String) throws {
        try Session.run(options, peer: peer) { client in
            let r = try client.call(params(peer))
            if options.json { return Console.json(r) }
            Console.out(done(r.peer))
        }
    }
}

struct TrustAcceptCommand: ParsableCommand, OnePeerTrustAction {
    static let configuration = CommandConfiguration(
        commandName: "accept", abstract: "Accept a new key held for your approval (policy new_identities = \"hold\").")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "The held peer (fingerprint prefix).", completion: PeerCompletion.peers) var peer: String
    static func params(_ peer: String) -> TrustAcceptParams { TrustAcceptParams(peer: peer) }
    static func done(_ p: PeerInfo) -> String {
        "✓ accepted \(Terminal.line(p.label)) (\(Terminal.line(p.fingerprint))); it can connect now"
    }
    func validate() throws { try validateForCommandLine(Self.params(peer)) }
    func run() throws { try Self.run(options, peer) }
}

struct TrustBlockCommand: ParsableCommand, OnePeerTrustAction {
    static let configuration = CommandConfiguration(
        commandName: "block", abstract: "Block a key: no session, nothing sent to it, nothing stored from it.")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "The peer (nickname, name or fingerprint prefix).", completion: PeerCompletion.peers) var peer:
        String
    static func params(_ peer: String) -> TrustBlockParams { TrustBlockParams(peer: peer) }
    static func done(_ p: PeerInfo) -> String {
        "blocked \(Terminal.line(p.label)) (\(Terminal.line(p.fingerprint))); `parley trust unblock \(Terminal.line(p.fingerprint))` to undo"
    }
    func validate() throws { try validateForCommandLine(Self.params(peer)) }
    func run() throws { try Self.run(options, peer) }
}

struct TrustUnblockCommand: ParsableCommand, OnePeerTrustAction {
    static let configuration = CommandConfiguration(
        commandName: "unblock", abstract: "Unblock a key (it is pinned again, not verified).")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "The peer (fingerprint prefix).", completion: PeerCompletion.peers) var peer: String
    static func params(_ peer: String) -> TrustUnblockParams { TrustUnblockParams(peer: peer) }
    static func done(_ p: PeerInfo) -> String {
        "unblocked \(Terminal.line(p.label)) (\(Terminal.line(p.fingerprint)))"
    }
    func validate() throws { try validateForCommandLine(Self.params(peer)) }
    func run() throws { try Self.run(options, peer) }
}

struct TrustForgetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Forget a key's pin, trust and nickname (its message history stays); its next contact is a first one."
    )
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "The peer (fingerprint prefix).", completion: PeerCompletion.peers) var peer: String
    func validate() throws { try validateForCommandLine(TrustForgetParams(peer: peer)) }

    /// What forgetting did to the keys the forgotten one had replaced, in plain words. No
    /// advice to unblock: such a key was retired by a person (a lost or stolen device's).
    static func blockedLines(_ blocked: [PeerInfo]) -> [String] {
        blocked.map {
            "also blocked \(Terminal.line($0.name)) (\(Terminal.line($0.fingerprint))): the earlier key it had "
                + "replaced stays refused, so forgetting does not make it trusted again"
        }
    }

    func run() throws {
        try Session.run(options, peer: peer) { client in
            let r = try client.call(TrustForgetParams(peer: peer))
            if options.json { return Console.json(r) }
            Console.out("forgot \(Terminal.line(r.fingerprint))")
            for line in Self.blockedLines(r.blocked) { Console.out(line) }
        }
    }
}

/// `parley trust nickname PEER [NAME]`: the person's own name for a peer wins over the one it gives itself.
struct TrustNicknameCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nickname", abstract: "Give a peer your own name for it (omit NAME to remove it).")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "The peer (nickname, name or fingerprint prefix).", completion: PeerCompletion.peers) var peer:
        String
    @Argument(help: "Your name for it.") var nickname: String?
    func validate() throws { try validateForCommandLine(PeersNicknameParams(peer: peer, nickname: nickname)) }
    func run() throws {
        try Session.run(options, peer: peer) { client in
            let r = try client.call(PeersNicknameParams(peer: peer, nickname: nickname))
            if options.json { return Console.json(r) }
            Console.out("\(Terminal.line(r.peer.fingerprint)) is \(Terminal.line(r.peer.label)) to you")
        }
    }
}
