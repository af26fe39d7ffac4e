/// Why a room operation could not be built or decoded. One case per rejection, each
/// saying what is wrong.
public enum RoomOperationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes ended before `field` was complete.
    case truncated(field: String)
    /// A complete operation was followed by `count` more bytes.
    case trailingBytes(count: Int)
    case unsupportedVersion(UInt8)
    case unknownKind(UInt8)
    /// The room name breaks the display-name rules (empty, too long, not UTF-8, a
    /// forbidden character).
    case invalidName(String)
    /// A create operation's member list is empty, too long, not in ascending order, has a
    /// duplicate, or does not include its creator.
    case invalidMembers(String)
    /// Parents missing, too many, not strictly ascending, or present on a create.
    case invalidParents(String)
    /// The sequence does not fit the operation (create: 1; others: at least 2, one more
    /// than the highest parent).
    case invalidSequence(UInt64)
    /// A policy byte with a reserved bit set.
    case invalidPolicy(UInt8)
    /// A role byte that names no role.
    case unknownRole(UInt8)
    /// The Ed25519 signature does not verify under the actor's key.
    case badSignature
    /// The operation is larger than `RoomOperation.maxEncodedLength`.
    case tooLarge(Int)
    /// A cap (`RoomOperation.removalCap`) asked for an operation that is not a remove.
    case capOnNonRemove

    public var description: String {
        switch self {
        case .truncated(let f): return "room operation truncated in \(f)"
        case .trailingBytes(let n): return "room operation followed by \(n) extra bytes"
        case .unsupportedVersion(let v):
            return
                "room operation version \(v) is not supported (this build reads version \(RoomOperation.currentVersion))"
        case .unknownKind(let k): return "unknown room operation kind \(k)"
        case .invalidName(let why): return "invalid room name: \(why)"
        case .invalidMembers(let why): return "invalid member list: \(why)"
        case .invalidParents(let why): return "invalid parents: \(why)"
        case .invalidSequence(let s): return "sequence \(s) does not fit the operation"
        case .invalidPolicy(let f): return "room policy flags \(f) set a reserved bit"
        case .unknownRole(let r): return "unknown room role \(r)"
        case .badSignature: return "room operation signature does not verify"
        case .tooLarge(let n): return "room operation of \(n) bytes exceeds \(RoomOperation.maxEncodedLength)"
        case .capOnNonRemove: return "only a remove (or leave) names a cap"
        }
    }
}
