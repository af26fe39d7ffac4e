import ArgumentParser
import Foundation
import ParleyControlProtocol

/// Shell completion of PEER and #ROOM arguments: the names the daemon knows, asked over
/// the control socket when the shell completes. A completion must never hang the shell,
/// so the whole exchange is bounded (`timeout`); without a daemon there is nothing to offer.
enum PeerCompletion {
    /// Each of connect and the (at most two) calls: long enough for a loaded daemon, and
    /// together short enough (1.5 s at worst) for a shell waiting on a Tab.
    static let timeout: Duration = .milliseconds(500)

    /// Peers only (trust, room member commands).
    static let peers = CompletionKind.custom { arguments, _, prefix in
        candidates(arguments: arguments, rooms: false).filter { $0.hasPrefix(prefix) }
    }

    /// Peers and rooms (send, read, chat, search, export).
    static let peersAndRooms = CompletionKind.custom { arguments, _, prefix in
        candidates(arguments: arguments, rooms: true).filter { $0.hasPrefix(prefix) }
    }

    /// What to offer: each peer's label when it is one plain shell word and unique among
    /// the peers, else its fingerprint prefix (a name can be shared; a word with spaces
    /// or quotes would not survive the shell); rooms as `#name`. A peer picks its own name:
    /// one that starts with `-` would be read as an option where it lands on the command
    /// line (`--socket=/tmp/theirs.sock` would send what the person types to another
    /// user's socket), and no quoting stops that, so such a peer is offered by fingerprint.
    static func words(peers: [PeerInfo], rooms: [RoomInfo]) -> [String] {
        var counts: [String: Int] = [:]
        for p in peers { counts[p.label.lowercased(), default: 0] += 1 }
        var out: [String] = []
        for p in peers {
            let label = p.label
            let plain =
                !label.isEmpty && !label.hasPrefix("-") && ShellQuoting.word(label) == label
                && counts[label.lowercased()] == 1
            out.append(plain ? label : String(p.fingerprint.prefix(9)))
        }
        for r in rooms where r.status == "joined" || r.status == "invited" {
            let word = "#" + r.name
            if ShellQuoting.word(r.name) == r.name { out.append(word) }
        }
        return out
    }

    /// `--socket PATH` / `--socket=PATH` among the words being completed, else the usual lookup.
    static func socketPath(arguments: [String]) -> String {
        var socket: String?
        for (i, a) in arguments.enumerated() {
            if a == "--socket", i + 1 < arguments.count { socket = arguments[i + 1] }
            if a.hasPrefix("--socket=") { socket = String(a.dropFirst("--socket=".count)) }
        }
        let options = try? ConnectionOptions.parse(socket.map { ["--socket", $0] } ?? [])
        return options?.socketPath()
            ?? ControlSocketPath.forClient(
                environment: ProcessInfo.processInfo.environment, exists: ControlSocketPath.somethingIsAt)
    }

    static func candidates(arguments: [String], rooms: Bool) -> [String] {
        do {
            let client = try ControlClient.connect(path: socketPath(arguments: arguments), callTimeout: timeout)
            defer { client.close() }
            let peers = try client.call(PeersListParams()).peers
            let roomList = rooms ? try client.call(RoomsListParams()).rooms : []
            return words(peers: peers, rooms: roomList)
        } catch {
            return []
        }
    }
}
