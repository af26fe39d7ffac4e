import ParleyStore

/// Who hears from the node: the observers of its events (control-socket subscribers, the
/// event journal, the notify hook), held weakly, and the daemon's chore on each keepalive
/// tick (the systemd status line shares the node's one timer instead of waking on its own).
/// Lives on the node's event loop.
final class NodeObservers {
    private var observers: [ObjectIdentifier: WeakObserver] = [:]
    /// Called at the end of every keepalive tick, on the loop.
    var onTick: (() -> Void)?

    /// How many observers are registered (status, tests).
    var count: Int { observers.count }

    func add(_ o: NodeObserver) { observers[ObjectIdentifier(o)] = WeakObserver(o) }
    func remove(_ o: NodeObserver) { observers[ObjectIdentifier(o)] = nil }

    /// Tells every observer still alive (and forgets the ones that are gone).
    func emit(_ e: NodeEvent, from node: Node) {
        for (k, w) in observers {
            guard let o = w.value else {
                observers[k] = nil
                continue
            }
            o.node(node, didEmit: e)
        }
    }

    /// The journal rows a message transaction should write for `method` events: nil when no
    /// observer journals them (`InTransactionJournal`), which first stores what it holds.
    func messageJournal(_ method: String, at now: Int64) -> MessageJournal? {
        var journaled = false
        for w in observers.values {
            guard let j = w.value as? InTransactionJournal else { continue }
            j.settleBeforeMessageTransaction()
            journaled = true
        }
        return journaled ? try? MessageJournal(method: method, at: now) : nil
    }
}

private struct WeakObserver {
    weak var value: NodeObserver?
    init(_ v: NodeObserver) { value = v }
}
