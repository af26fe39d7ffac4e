/// A control connection's outgoing lines between the moment they are encoded and the one
/// socket write of the event-loop turn (docs/ARCHITECTURE.md, "The control path").
///
/// Every answer and notification is encoded straight into one of two buffers the connection
/// keeps for its lifetime (their capacity stays, so a line costs no allocation of its own):
/// `ready`, what goes out at the end of this turn in one write, or `held`, the lines written
/// after a commit that is not on disk yet (group commit: a send is answered, a received
/// message shown, only once durable). A held line keeps its place: every line after it is
/// held too, so answers and notifications leave in the order they were written.
///
/// Pure bookkeeping (no I/O): `ControlConnection` decides when to write `ready` out.
struct ControlOutput {
    /// Newline-terminated lines to write at the end of this turn, in order.
    private(set) var ready: [UInt8] = []
    /// Subscriber lines in `ready` (counted in the connection's backlog until written).
    private(set) var readyAccounted = (count: 0, bytes: 0)
    /// Newline-terminated lines waiting for the disk, in order.
    private var held: [UInt8] = []
    /// Where each held line ends in `held`, the commit it waits for (0: none of its own, it
    /// only keeps its place) and whether it counts in a subscriber's backlog.
    private var heldLines: [(end: Int, through: UInt64, accounted: Bool)] = []
    /// Reading was paused because `heldBytes` passed the connection's limit.
    var readingPausedForDisk = false
    /// A write of `ready` is scheduled for the end of this turn.
    var flushScheduled = false
    /// Requests were read this turn: the end of the turn checks whether to stop reading.
    var readThisTurn = false

    var heldBytes: Int { held.count }
    var isHolding: Bool { !heldLines.isEmpty }
    /// The commit the first held line waits for.
    var firstHeldCommit: UInt64? { heldLines.first?.through }

    /// Encodes one line with `write` into `ready`, or into `held` behind commit `through`
    /// when that is given or lines are held already (unless `ignoringHeld`: a last word
    /// before closing); adds its newline. Returns the line's size with its newline, or nil
    /// (and nothing kept) when `write` throws.
    @discardableResult
    mutating func append(
        heldBehind through: UInt64?, accounted: Bool, ignoringHeld: Bool = false,
        _ write: (inout [UInt8]) throws -> Void
    ) -> Int? {
        if !ignoringHeld && (through != nil || isHolding) {
            let start = held.count
            do { try write(&held) } catch {
                held.removeSubrange(start...)
                return nil
            }
            held.append(UInt8(ascii: "\n"))
            heldLines.append((held.count, through ?? 0, accounted))
            return held.count - start
        }
        let start = ready.count
        do { try write(&ready) } catch {
            ready.removeSubrange(start...)
            return nil
        }
        ready.append(UInt8(ascii: "\n"))
        let size = ready.count - start
        if accounted {
            readyAccounted.count += 1
            readyAccounted.bytes += size
        }
        return size
    }

    /// Moves the held lines whose commits are durable, up to the first that is not, to
    /// `ready`, in order. Returns how many moved.
    @discardableResult
    mutating func releaseDurable(_ isDurable: (UInt64) -> Bool) -> Int {
        var released = 0
        var end = 0
        for line in heldLines {
            guard line.through == 0 || isDurable(line.through) else { break }
            if line.accounted {
                readyAccounted.count += 1
                readyAccounted.bytes += line.end - end
            }
            end = line.end
            released += 1
        }
        guard released > 0 else { return 0 }
        ready.append(contentsOf: held[..<end])
        held.removeSubrange(..<end)
        heldLines.removeFirst(released)
        for k in heldLines.indices { heldLines[k].end -= end }
        return released
    }

    /// Hands `ready` to `write` (which copies it out) and empties it, keeping its capacity.
    /// Returns the subscriber lines it held, for the backlog.
    mutating func takeReady(_ write: (UnsafeRawBufferPointer) -> Void) -> (count: Int, bytes: Int) {
        let accounted = readyAccounted
        ready.withUnsafeBytes { write($0) }
        ready.removeAll(keepingCapacity: true)
        readyAccounted = (0, 0)
        return accounted
    }

    /// The connection closed: nothing held will be written.
    mutating func dropHeld() {
        held.removeAll()
        heldLines.removeAll()
        readingPausedForDisk = false
    }
}
