/// Why a new identity key was taken for a known peer's key change (docs/PROTOCOL.md
/// "Trust on first use"): it presented a pinned peer's display name, or it answered at an
/// address this node dialled for a pinned peer (whatever name it gave).
enum KeyChangeEvidence: Equatable, Sendable {
    case name
    case address

    /// The warning logged once per key change; it says which rule matched, so a person
    /// reading it knows whether to compare names or ask who now runs that address.
    var logMessage: String {
        switch self {
        case .name:
            return "KEY CHANGED: a different identity key is using a known name; refused until a person accepts it"
        case .address:
            return "KEY CHANGED: a different identity key answered at a known peer's address; refused until a person accepts it"
        }
    }
}
