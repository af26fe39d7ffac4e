import Foundation
import ParleyControlProtocol

/// One real parleyd process on loopback: own state directory and control socket, mDNS
/// off, TCP on 127.0.0.1 with a port chosen by the kernel (read back through node.status).
final class Parleyd: @unchecked Sendable {
    let name: String
    let socketPath: String
    let child: ChildProcess
    private(set) var port = 0
    /// How long a fresh daemon may take to answer on its control socket.
    static let startTimeoutSeconds = 20.0

    /// `launcher` runs the daemon under another program (valgrind for the instruction
    /// counts), which must exec it in the same process so `pid` stays the daemon's.
    init(
        binary: String, workDir: String, name: String, peers: [String] = [],
        durability: String = "full", launcher: [String] = [], extraEnvironment: [String: String] = [:],
        extraArguments: [String] = []
    ) throws(BenchError) {
        self.name = name
        let state = workDir + "/\(name)-state"
        socketPath = workDir + "/\(name).sock"
        var args = [
            "--state-dir", state, "--name", name, "--socket", socketPath, "--no-mdns",
            "--listen", "127.0.0.1:0", "--log-level", "warning", "--durability", durability
        ]
        for p in peers { args += ["--peer", p] }
        args += extraArguments
        var env = ProcessInfo.processInfo.environment
        env["NOTIFY_SOCKET"] = nil
        env.merge(extraEnvironment) { _, new in new }
        child = try ChildProcess(
            label: "parleyd \(name)", executable: launcher.first ?? binary,
            arguments: launcher.dropFirst() + (launcher.isEmpty ? [] : [binary]) + args,
            logPath: workDir + "/\(name).log", environment: env)
        // Under valgrind a daemon starts tens of times slower.
        try waitReady(seconds: launcher.isEmpty ? Self.startTimeoutSeconds : Self.startTimeoutSeconds * 6)
    }

    var address: String { "127.0.0.1:\(port)" }
    var pid: Int32 { child.pid }

    private func waitReady(seconds: Double) throws(BenchError) {
        let deadline = Deadline(seconds: seconds)
        while !deadline.passed {
            guard child.isRunning else { throw .process("parleyd \(name) exited: \(child.logTail())") }
            if let status = try? call("node.status"),
                let listen = (status["listen"] as? [String])?.first,
                let p = listen.split(separator: ":").last.flatMap({ Int($0) })
            {
                port = p
                return
            }
            Clock.sleep(milliseconds: 20)
        }
        throw .timedOut("parleyd \(name) did not answer on \(socketPath)")
    }

    /// One call on a fresh control connection.
    func call(_ method: String, params: String? = nil) throws(BenchError) -> [String: Any] {
        let c = try ControlLine(path: socketPath)
        defer { c.close() }
        return try c.call(method, params: params)
    }

    /// `files.send` of `path` (opened here, passed as a descriptor): the first transfer's id.
    /// The daemon copies the file before it answers, so that copy is part of the timed span,
    /// as a person's `parley send --attach` would see it.
    func sendFile(to peer: String, path: String) throws(BenchError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .io("cannot open \(path)") }
        defer { close(fd) }
        do {
            let (result, extra) = try ControlClient.callPassing(
                FilesSendParams(to: peer, files: [FileAttachment(name: (path as NSString).lastPathComponent)]),
                descriptors: [fd], controlPath: socketPath, timeout: .seconds(900))
            DescriptorMessage.closeAll(extra)
            guard let id = result.transfers.first?.id else { throw BenchError.protocolError("files.send: no transfer") }
            return id
        } catch let error as BenchError {
            throw error
        } catch {
            throw .protocolError("files.send: \(error)")
        }
    }

    func isOnline(peer: String) -> Bool {
        guard let r = try? call("peers.list"), let peers = r["peers"] as? [[String: Any]] else { return false }
        return peers.contains { ($0["name"] as? String) == peer && ($0["online"] as? Bool) == true }
    }

    func peersOnline() -> Int {
        (try? call("node.status"))?["peersOnline"] as? Int ?? 0
    }

    func stop() { child.stop() }
}

/// Two daemons that know each other (B dials A) with a session up.
func startPair(
    binary: String, workDir: String, names: (String, String) = ("alice", "bob"),
    durability: String, launcher: [String] = [], extraEnvironment: [String: String] = [:],
    extraArguments: [String] = []
) throws(BenchError) -> (Parleyd, Parleyd) {
    let a = try Parleyd(
        binary: binary, workDir: workDir, name: names.0, durability: durability, launcher: launcher,
        extraEnvironment: extraEnvironment, extraArguments: extraArguments)
    let b: Parleyd
    do {
        b = try Parleyd(
            binary: binary, workDir: workDir, name: names.1, peers: [a.address], durability: durability,
            launcher: launcher, extraEnvironment: extraEnvironment, extraArguments: extraArguments)
    } catch {
        a.stop()
        throw error
    }
    let deadline = Deadline(seconds: launcher.isEmpty ? 20 : 120)
    while !(a.isOnline(peer: names.1) && b.isOnline(peer: names.0)) {
        if deadline.passed {
            a.stop()
            b.stop()
            throw .timedOut("\(names.0) and \(names.1) did not come online")
        }
        Clock.sleep(milliseconds: 20)
    }
    // Colleagues who compared safety numbers, as the office pairs the rows stand for: each
    // verifies the other. Unverified, B keeps A at a stranger's standing (10,000 messages,
    // docs/PROTOCOL.md "Limits", receive quotas), and rows 3 and 4 together send more than that: row 4's
    // larger windows and row 5 then measured refusals (0 msg/s).
    do {
        for (x, y) in [(a, b), (b, a)] {
            let fingerprint = (try y.call("node.whoami"))["fingerprint"] as? String ?? ""
            _ = try x.call("trust.verify", params: "{\"peer\":\"\(y.name)\",\"fingerprint\":\"\(fingerprint)\"}")
        }
    } catch {
        a.stop()
        b.stop()
        throw error
    }
    return (a, b)
}
