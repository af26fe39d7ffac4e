import Foundation

/// Row 2 over loopback TCP: sequential connect → XX handshake → ping → pong against a
/// running parleyd, beside `openssl s_time -new` against `openssl s_server` (TLS 1.3, an
/// Ed25519 certificate) doing connect → handshake → request → first reply.
struct LoopbackHandshakeBench {
    let scale: BenchScale
    let workDir: String
    /// The goal: Parley's loopback handshake rate at least this multiple of TLS.
    static let goalRateRatio = 1.3

    func run(daemon: Parleyd) -> [BenchRow] {
        var rows: [BenchRow] = []
        var parleyRate: Double?
        var parleyLatency = Samples()
        var failure: String?
        do {
            let me = try BenchIdentity(name: "bench-hs")
            // One warm-up session: the first one pins the identity in the daemon's store.
            let warm = try NoiseClient.connect(port: daemon.port, as: me, deadline: Deadline(seconds: 10))
            try warm.pingPong(0, deadline: Deadline(seconds: 10))
            warm.close()
            let deadline = Deadline(seconds: scale.rowSeconds)
            let start = Clock.nowNs()
            var i = 0
            while i < scale.loopbackHandshakes && !deadline.passed {
                let t0 = Clock.nowNs()
                let c = try NoiseClient.connect(port: daemon.port, as: me, deadline: Deadline(seconds: 10))
                try c.pingPong(UInt64(i + 1), deadline: Deadline(seconds: 10))
                parleyLatency.add(Clock.nowNs() - t0)
                c.close()
                i += 1
            }
            parleyRate = Double(i) / (Double(Clock.nowNs() - start) / 1e9)
        } catch {
            failure = "\(error)"
        }
        let tls = measureTLS()
        let tlsNote =
            tls.error.map { "TLS reference failed: \($0)" }
            ?? "TLS: openssl s_time -new -www / for \(scale.tlsSeconds) s, \(tls.connections) connections (mean only)"
        if let parleyRate {
            rows.append(
                BenchRow(
                    id: "2c", measure: "Loopback handshakes/s (sequential, incl. ping/pong)", unit: "/s",
                    parley: parleyRate, reference: tls.rate, referenceName: "TLS 1.3 Ed25519 s_time -new",
                    goal: .ratioAtLeast(Self.goalRateRatio), note: tlsNote))
            rows.append(
                BenchRow(
                    id: "2d", measure: "Connect → first encrypted reply, median", unit: "µs",
                    parley: parleyLatency.median / 1000, reference: tls.meanMicros,
                    referenceName: "TLS 1.3 s_time mean", goal: .none,
                    note:
                        "Parley p99 \(fmt(parleyLatency.p99 / 1000)) µs over \(parleyLatency.count); TLS gives only a mean"
                ))
        } else {
            let why = failure ?? "unknown"
            rows.append(
                .skipped(
                    id: "2c", measure: "Loopback handshakes/s", unit: "/s", referenceName: "TLS 1.3 s_time",
                    goal: .ratioAtLeast(Self.goalRateRatio), why: why))
            rows.append(
                .skipped(
                    id: "2d", measure: "Connect → first encrypted reply, median", unit: "µs",
                    referenceName: "TLS 1.3 s_time", goal: .none, why: why))
        }
        return rows
    }

    struct TLSResult {
        var rate: Double?
        var meanMicros: Double?
        var connections = 0
        var error: String?
    }

    func measureTLS() -> TLSResult {
        guard let openssl = findExecutable("openssl") else { return TLSResult(error: "openssl not installed") }
        let key = workDir + "/tls-ed25519.key"
        let cert = workDir + "/tls-ed25519.crt"
        do {
            let (rc, out) = try runToCompletion(
                openssl,
                [
                    "req", "-x509", "-newkey", "ed25519", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"
                ], timeout: 30)
            guard rc == 0 else { return TLSResult(error: "openssl req failed: \(out)") }
            let port = try freeLoopbackPort()
            let server = try ChildProcess(
                label: "openssl s_server", executable: openssl,
                arguments: [
                    "s_server", "-accept", "127.0.0.1:\(port)", "-cert", cert, "-key", key,
                    "-tls1_3", "-www", "-quiet"
                ],
                logPath: workDir + "/s_server.log")
            defer { server.stop() }
            // Wait until it accepts.
            let ready = Deadline(seconds: 10)
            while (try? Socket.tcp(port: port, deadline: ready)) == nil {
                guard !ready.passed, server.isRunning else {
                    return TLSResult(error: "s_server did not start: \(server.logTail())")
                }
                Clock.sleep(milliseconds: 20)
            }
            let t0 = Clock.nowNs()
            let (src, text) = try runToCompletion(
                openssl,
                [
                    "s_time", "-connect", "127.0.0.1:\(port)", "-new", "-www", "/",
                    "-time", "\(scale.tlsSeconds)"
                ],
                timeout: Double(scale.tlsSeconds) + 30)
            let wall = Double(Clock.nowNs() - t0) / 1e9
            guard src == 0 else { return TLSResult(error: "s_time exited \(src): \(text.suffix(300))") }
            // "N connections in T real seconds, B bytes read per connection"
            guard let line = text.split(separator: "\n").first(where: { $0.contains("real seconds") }),
                let n = Int(line.split(separator: " ").first ?? "")
            else {
                return TLSResult(error: "unexpected s_time output: \(text.suffix(300))")
            }
            // s_time reports whole seconds; the wall time measured here is finer.
            return TLSResult(rate: Double(n) / wall, meanMicros: wall * 1e6 / Double(n), connections: n)
        } catch {
            return TLSResult(error: "\(error)")
        }
    }
}
