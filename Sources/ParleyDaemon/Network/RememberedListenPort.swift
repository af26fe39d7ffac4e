import Foundation

/// The TCP port a daemon listening on port 0 ("any free port") chose the first time,
/// kept in `<state-dir>/listen-port` and asked for again at every start: several
/// instances on one host (parleyd@.service, one per person) never collide, and peers that
/// remembered an instance's address still reach it after a restart. If the remembered
/// port is taken by then, a fresh one is chosen and remembered (peers learn it by mDNS and
/// from the card's `listenPorts`).
struct RememberedListenPort {
    static let fileName = "listen-port"
    let path: String

    init(stateDirectory: String) {
        path = (stateDirectory as NSString).appendingPathComponent(Self.fileName)
    }

    /// The remembered port, nil when none (or the file is not a port number).
    func load() -> UInt16? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let port = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines)), port != 0
        else { return nil }
        return port
    }

    /// Remembers `port` (atomically: a crash leaves the old or the new number, not half).
    func save(_ port: UInt16) {
        guard port != 0, load() != port else { return }
        try? "\(port)\n".write(toFile: path, atomically: true, encoding: .utf8)
    }
}
