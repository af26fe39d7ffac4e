/// Why a measurement could not be taken. A row that hits one is reported as skipped
/// or failed with this text; the other rows still run.
enum BenchError: Error, CustomStringConvertible {
    case io(String)
    case timedOut(String)
    case protocolError(String)
    case process(String)
    case unavailable(String)

    var description: String {
        switch self {
        case .io(let s): return "I/O error: \(s)"
        case .timedOut(let s): return "timed out: \(s)"
        case .protocolError(let s): return "protocol error: \(s)"
        case .process(let s): return "process error: \(s)"
        case .unavailable(let s): return "not available: \(s)"
        }
    }
}
