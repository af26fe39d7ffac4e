/// Who opened a TCP connection: the tie-break between two sessions of one pair depends on it.
public enum ConnectionDirection: String, Sendable, Hashable {
    case inbound, outbound
}
