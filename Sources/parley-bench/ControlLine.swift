import Foundation

/// A JSON-RPC 2.0 client on parleyd's control socket (one JSON object per line,
/// docs/CONTROL.md) that can pipeline: requests are written without waiting, lines are
/// read as they come. Hot paths look at raw bytes (`ByteScan`); setup calls decode JSON.
final class ControlLine: @unchecked Sendable {
    let socket: Socket
    private var buffer: [UInt8] = []
    private var readIndex = 0
    private(set) var nextID = 1
    /// Consumed bytes kept before the buffer is compacted: keeps compaction rare.
    static let compactThreshold = 1 << 20

    init(path: String) throws(BenchError) {
        socket = try Socket.unix(path: path)
    }

    func close() { socket.close() }

    /// One request line with a fresh numeric id; `params` is a JSON object text or nil.
    func requestLine(method: String, params: String?) -> [UInt8] {
        let id = nextID
        nextID += 1
        var s = "{\"jsonrpc\":\"2.0\",\"id\":\(id),\"method\":\"\(method)\""
        if let params { s += ",\"params\":\(params)" }
        s += "}\n"
        return Array(s.utf8)
    }

    func write(_ bytes: [UInt8], deadline: Deadline) throws(BenchError) {
        try socket.sendAll(bytes, deadline: deadline)
    }

    /// The next complete line (without the newline), waiting until `deadline`.
    func nextLine(deadline: Deadline) throws(BenchError) -> [UInt8] {
        while true {
            if let line = popLine() { return line }
            let n = try socket.receive(into: &buffer, deadline: deadline)
            if n == 0 { throw .io("control socket closed by parleyd") }
        }
    }

    /// A complete line if one is buffered, without reading the socket.
    func popLine() -> [UInt8]? {
        guard let nl = buffer[readIndex...].firstIndex(of: 0x0a) else {
            if readIndex > Self.compactThreshold || readIndex == buffer.count { compact() }
            return nil
        }
        let line = Array(buffer[readIndex..<nl])
        readIndex = nl + 1
        return line
    }

    /// Reads whatever the socket has now (waiting at most `ms`); false if nothing came.
    func fill(waitMilliseconds ms: Int32) throws(BenchError) -> Bool {
        guard socket.readable(withinMilliseconds: ms) else { return false }
        let n = try socket.receive(into: &buffer, deadline: Deadline(seconds: 1))
        if n == 0 { throw .io("control socket closed by parleyd") }
        return true
    }

    private func compact() {
        buffer.removeFirst(readIndex)
        readIndex = 0
    }

    /// A blocking call for setup and small measurements; returns the decoded `result`.
    func call(_ method: String, params: String? = nil, timeout: Double = 10) throws(BenchError) -> [String: Any] {
        let id = nextID
        let deadline = Deadline(seconds: timeout)
        try write(requestLine(method: method, params: params), deadline: deadline)
        while true {
            let line = try nextLine(deadline: deadline)
            guard let obj = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any] else {
                throw .protocolError("\(method): unreadable line")
            }
            guard (obj["id"] as? Int) == id else { continue }  // a notification
            if let err = obj["error"] as? [String: Any] {
                throw .protocolError("\(method): \(err["message"] ?? err)")
            }
            return obj["result"] as? [String: Any] ?? [:]
        }
    }
}

/// Byte-level looks into JSON lines whose shape the benchmark itself chose (ASCII bodies
/// with a numbered prefix), so the client keeps up with the daemon.
enum ByteScan {
    static func find(_ needle: [UInt8], in hay: [UInt8], from start: Int = 0) -> Int? {
        guard needle.count <= hay.count, start <= hay.count - needle.count else { return nil }
        let first = needle[0]
        var i = start
        let last = hay.count - needle.count
        while i <= last {
            if hay[i] == first {
                var j = 1
                while j < needle.count && hay[i + j] == needle[j] { j += 1 }
                if j == needle.count { return i }
            }
            i += 1
        }
        return nil
    }

    static func contains(_ needle: [UInt8], in hay: [UInt8]) -> Bool { find(needle, in: hay) != nil }

    /// The decimal number right after `marker` (e.g. `"body":"tp-`), if present.
    static func number(after marker: [UInt8], in line: [UInt8]) -> Int? {
        guard var i = find(marker, in: line) else { return nil }
        i += marker.count
        var n = 0
        var digits = 0
        while i < line.count, line[i] >= 0x30, line[i] <= 0x39 {
            n = n * 10 + Int(line[i] - 0x30)
            i += 1
            digits += 1
        }
        return digits > 0 ? n : nil
    }
}
