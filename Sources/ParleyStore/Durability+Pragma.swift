import ParleyCore

extension Durability {
    /// The SQLite `synchronous` setting that gives this durability (WAL mode either way).
    var synchronousPragma: String {
        switch self {
        case .full: return "FULL"
        case .normal: return "NORMAL"
        }
    }
}
