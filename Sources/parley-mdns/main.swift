// parley-mdns: "is discovery working on this host?" Advertises or browses Parley's
// DNS-SD service through ParleyDiscovery, exactly as parleyd does, and prints one line
// per event (flushed at once, so tests and pipes see them as they happen).
import Dispatch
import ParleyDiscovery

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let usage = """
    usage: parley-mdns advertise [--browse] NAME PORT [KEY=VALUE...]
           parley-mdns browse [--seconds N]
           parley-mdns --help

    Checks Parley's mDNS discovery (DNS-SD service _parley._tcp, through avahi-daemon).

      advertise  Registers NAME on PORT with the given TXT entries (Parley uses v=1 and
                 fp=FINGERPRINT) until SIGINT or SIGTERM, then withdraws it and exits.
                 With --browse, also browses as parleyd does (our own name is not listed).
                 Reads commands from stdin while it runs, one per line:
                   update NAME PORT [KEY=VALUE...]   re-register with a new name/port/TXT
      browse     Prints the Parley nodes on the LAN as they come and go; with --seconds N,
                 exits after N seconds.

    Output, one line per event:
      registered NAME                      advertised under NAME (avahi renames on conflict)
      found NAME HOST PORT ADDR,... K=V... a node, with its addresses and TXT entries
      own NAME                             our own advertisement came back through our browser
      lost NAME                            that node withdrew
      unavailable REASON                   avahi-daemon is not reachable; retrying
      available                            it is again
      lookup-failed HOST REASON            HOST did not resolve to an address
      withdrawn                            (advertise) the advertisement is gone
      error MESSAGE                        (advertise) a command on stdin was refused
    NAME, HOST and values escape space as \\032 and backslash as \\\\ (DNS-SD style).

    If it prints "unavailable": start avahi-daemon (systemctl start avahi-daemon).
    If it prints "lookup-failed": install libnss-mdns and put mdns4_minimal on the hosts
    line of /etc/nsswitch.conf. If nothing is found: check that both hosts are on the
    same link and that the firewall lets UDP port 5353 through.
    """

/// How long `advertise` waits for the withdrawal on SIGINT/SIGTERM before exiting anyway:
/// deallocating a registration is a D-Bus round trip, normally milliseconds.
let withdrawTimeoutSeconds = 5
/// Upper bound for `browse --seconds`: a day; longer runs don't need a timer.
let maxBrowseSeconds = 86_400

enum Command {
    case advertise(ServiceAdvertisement, browse: Bool)
    case browse(seconds: Int?)
    case help
}

func parse(_ args: [String]) -> Result<Command, UsageError> {
    guard let verb = args.first else { return .failure(UsageError("missing command")) }
    let rest = Array(args.dropFirst())
    switch verb {
    case "-h", "--help", "help":
        return .success(.help)
    case "advertise":
        let browse = rest.first == "--browse"
        let rest = browse ? Array(rest.dropFirst()) : rest
        guard rest.count >= 2 else { return .failure(UsageError("advertise needs NAME and PORT")) }
        guard let port = UInt16(rest[1]), port > 0 else {
            return .failure(UsageError("PORT must be 1-65535, got \(rest[1])"))
        }
        var txt: [String: String] = [:]
        for pair in rest.dropFirst(2) {
            guard let eq = pair.firstIndex(of: "="), eq != pair.startIndex else {
                return .failure(UsageError("TXT entries are KEY=VALUE, got \(pair)"))
            }
            txt[String(pair[..<eq])] = String(pair[pair.index(after: eq)...])
        }
        do {
            _ = try TXTRecord.encodeStrict(txt)
        } catch {
            return .failure(UsageError(error.description))
        }
        return .success(.advertise(ServiceAdvertisement(instanceName: rest[0], port: port, txt: txt), browse: browse))
    case "browse":
        switch rest.count {
        case 0:
            return .success(.browse(seconds: nil))
        case 2 where rest[0] == "--seconds":
            guard let n = Int(rest[1]), n > 0, n <= maxBrowseSeconds else {
                return .failure(UsageError("--seconds must be 1-\(maxBrowseSeconds), got \(rest[1])"))
            }
            return .success(.browse(seconds: n))
        default:
            return .failure(UsageError("browse takes only --seconds N"))
        }
    default:
        return .failure(UsageError("unknown command \(verb)"))
    }
}

struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// DNS-SD presentation style, so a line splits on spaces: "\032" for space, "\\" for
/// backslash, "\DDD" for other control bytes.
func escaped(_ s: String) -> String {
    var out: [UInt8] = []
    for byte in s.utf8 {
        switch byte {
        case UInt8(ascii: "\\"):
            out += Array("\\\\".utf8)
        case 0...0x20, 0x7F:
            let digits = String(byte)
            out += Array(("\\" + String(repeating: "0", count: 3 - digits.count) + digits).utf8)
        default:
            out.append(byte)
        }
    }
    return String(decoding: out, as: UTF8.self)
}

func line(for event: DiscoveryEvent) -> String {
    switch event {
    case .registered(let name):
        return "registered \(escaped(name))"
    case .found(let peer):
        let addresses = peer.addresses.isEmpty ? "-" : peer.addresses.joined(separator: ",")
        let txt = peer.txt.keys.sorted().map { "\(escaped($0))=\(escaped(peer.txt[$0] ?? ""))" }
        return (["found", escaped(peer.instanceName), escaped(peer.hostTarget), String(peer.port), addresses] + txt)
            .joined(separator: " ")
    case .ownAdvertisementBrowsed(let name):
        return "own \(escaped(name))"
    case .lost(let name):
        return "lost \(escaped(name))"
    case .unavailable(let reason):
        return "unavailable \(reason)"
    case .available:
        return "available"
    case .addressLookupFailed(let host, let reason):
        return "lookup-failed \(escaped(host)) \(reason)"
    }
}

/// Writes one line to stdout unbuffered, so a reader sees it at once.
func say(_ text: String) {
    let bytes = Array((text + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes[offset...].withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        if n < 0, errno == EINTR { continue }
        guard n > 0 else { return }  // stdout closed: nothing useful left to do with the line
        offset += n
    }
}

/// A command line on stdin longer than this is dropped: a name, a port and a small TXT
/// record fit in far less.
let maxCommandLineBytes = 4096

/// Reads stdin on the main queue and calls `handle` with the words of each line; stops at
/// end of file (stdin from /dev/null just means "no commands").
func readCommands(_ handle: @escaping ([String]) -> Void) -> DispatchSourceRead {
    let source = DispatchSource.makeReadSource(fileDescriptor: STDIN_FILENO, queue: .main)
    var pending: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1024)
    source.setEventHandler {
        let n = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
        if n < 0, errno == EINTR || errno == EAGAIN { return }
        guard n > 0 else { return source.cancel() }
        pending += chunk[..<n]
        while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
            let line = String(decoding: pending[..<newline], as: UTF8.self)
            pending.removeSubrange(...newline)
            let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            if !words.isEmpty { handle(words) }
        }
        if pending.count > maxCommandLineBytes {
            pending.removeAll()
            say("error command line longer than \(maxCommandLineBytes) bytes dropped")
        }
    }
    source.resume()
    return source
}

func fail(_ message: String) -> Never {
    let text = "parley-mdns: \(message)\n\(usage)\n"
    _ = Array(text.utf8).withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(2)
}

func run(_ command: Command) -> Never {
    let advertisement: ServiceAdvertisement?
    let seconds: Int?
    let browse: Bool
    switch command {
    case .help:
        say(usage)
        exit(0)
    case .advertise(let ad, let alsoBrowse):
        advertisement = ad
        seconds = nil
        browse = alsoBrowse
    case .browse(let n):
        advertisement = nil
        seconds = n
        browse = true
    }

    MDNSDiscovery.silenceAvahiCompatibilityWarning()
    signal(SIGPIPE, SIG_IGN)  // a closed stdout must not kill us before we withdraw
    let discovery = MDNSDiscovery(advertisement: advertisement, browse: browse, queue: .main) {
        say(line(for: $0))
    }
    let finish: @Sendable () -> Void = {
        discovery.stop {
            if advertisement != nil { say("withdrawn") }
            exit(0)
        }
        DispatchQueue.main.asyncAfter(deadline: .now() + .seconds(withdrawTimeoutSeconds)) {
            say("unavailable withdrawal did not complete within \(withdrawTimeoutSeconds) s")
            exit(1)
        }
    }
    var signalSources: [DispatchSourceSignal] = []
    for sig in [SIGINT, SIGTERM] {
        signal(sig, SIG_IGN)  // delivered through the dispatch source instead
        let source = DispatchSource.makeSignalSource(signal: sig, queue: .main)
        source.setEventHandler(handler: finish)
        source.resume()
        signalSources.append(source)
    }
    if let seconds {
        DispatchQueue.main.asyncAfter(deadline: .now() + .seconds(seconds), execute: finish)
    }
    let commands =
        advertisement == nil
        ? nil
        : readCommands { words in
            switch parse(["advertise"] + words.dropFirst()) {
            case .success(.advertise(let ad, _)) where words.first == "update":
                discovery.updateAdvertisement(ad)
            case .failure(let error) where words.first == "update":
                say("error \(error.message)")
            default:
                say("error unknown command; use: update NAME PORT [KEY=VALUE...]")
            }
        }
    discovery.start()
    withExtendedLifetime((signalSources, commands)) { dispatchMain() }
}

switch parse(Array(CommandLine.arguments.dropFirst())) {
case .success(let command): run(command)
case .failure(let error): fail(error.message)
}
