import ParleyCore

/// Row 2, in-process: Parley's full XX handshake with card signing (done once) and card
/// verification, both sides in this thread, each side's CPU time measured separately.
struct HandshakeCPUBench {
    let scale: BenchScale
    /// The goal: CPU per side at most this multiple of the crypto floor.
    static let goalRatioToFloor = 1.5

    func run(floor: CryptoFloorBench.Floor) throws -> [BenchRow] {
        let a = try BenchIdentity(name: "initiator")
        let b = try BenchIdentity(name: "responder")
        var ini = Samples()
        var res = Samples()
        let deadline = Deadline(seconds: scale.rowSeconds)
        var i = 0
        while i < scale.handshakes && !deadline.passed {
            var t = Clock.threadCPUNs()
            var hi = a.handshake(role: .initiator)
            let m1 = try hi.start()
            var ti = Clock.threadCPUNs() - t

            t = Clock.threadCPUNs()
            var hr = b.handshake(role: .responder)
            guard case .send(let m2) = try hr.receive(m1) else { throw BenchError.protocolError("no message 2") }
            var tr = Clock.threadCPUNs() - t

            t = Clock.threadCPUNs()
            guard case .established(let m3, _) = try hi.receive(m2), let m3 else {
                throw BenchError.protocolError("no message 3")
            }
            ti += Clock.threadCPUNs() - t

            t = Clock.threadCPUNs()
            guard case .established = try hr.receive(m3) else { throw BenchError.protocolError("responder not done") }
            tr += Clock.threadCPUNs() - t
            ini.add(ti)
            res.add(tr)
            i += 1
        }
        let note = "median of \(ini.count) handshakes, thread CPU time; reference = row 1f floor"
        return [
            BenchRow(
                id: "2a", measure: "Handshake CPU, initiator side", unit: "µs", parley: ini.median / 1000,
                reference: floor.libsodiumMicros, referenceName: "crypto floor (1f)",
                goal: .ratioAtMost(Self.goalRatioToFloor), note: note),
            BenchRow(
                id: "2b", measure: "Handshake CPU, responder side", unit: "µs", parley: res.median / 1000,
                reference: floor.libsodiumMicros, referenceName: "crypto floor (1f)",
                goal: .ratioAtMost(Self.goalRatioToFloor), note: note)
        ]
    }
}
