import ParleyStore

/// Failures a control method meets outside the node's own operations (reading the store
/// for an answer, rotating the key), each named for what failed, so the client is not
/// told "could not store the message" when the store could not be *read*, or when the
/// key rotation failed. All are answered with `storageFailed`; the message says what
/// happened to the daemon's state and what to do next.
enum ControlFailure: Error, CustomStringConvertible {
    /// The store could not be read to answer; nothing was changed.
    case storeRead(what: String, StoreError)
    /// Marking a room's messages read (or counting what is left unread) failed.
    case markRead(room: String, StoreError)
    /// The new Noise key could not be written: the old key stays in use.
    case keyNotRotated(reason: String)
    /// The new Noise key is on disk and in use for new handshakes, but the card that
    /// announces it to peers could not be stored.
    case cardNotReissued(reason: String)

    var description: String {
        switch self {
        case let .storeRead(what, error):
            return "could not read \(what) from the store, nothing was changed: \(error); "
                + "see the daemon's log, and retry once the store is readable"
        case let .markRead(room, error):
            return "could not mark \(room) read: \(error); retry once the store is writable"
        case let .keyNotRotated(reason):
            return "could not rotate the Noise key, the old key stays in use: \(reason); "
                + "fix that and run `parley rotate-key` again"
        case let .cardNotReissued(reason):
            return "the new Noise key is in use, but the card announcing it could not be stored: \(reason); "
                + "run `parley rotate-key` again once the store is writable, so peers learn the new key"
        }
    }
}
