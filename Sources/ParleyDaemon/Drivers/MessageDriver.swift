import NIOCore
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// The message path's state beside the direct messages (those are `DirectMessageDriver`'s,
/// with the outbox's counts): whether the action outbox (edits, deletes, reactions) may
/// hold work, what the receive quota has counted (`ReceiveQuotaDriver`), whether read
/// receipts are sent, and when deleted texts' words are purged from the search index
/// (`ErasurePurgeSchedule`).
///
/// `Node+Conversation.swift` (actions, erasure), `Node+Quota.swift` (receiving) and
/// `Node+ReadReceipts.swift` route to it. Its state is its own and lives on the node's
/// event loop (the loop is its lock); the purge's delay runs on the injected clock.
final class MessageDriver {
    private let loop: EventLoop
    private let clock: any NodeClock
    private let log: Logger
    /// Purges erased texts' words from the search index (the store's, in the daemon).
    private let purgeSearchIndex: () throws -> Void

    /// False once the action outbox was found empty (and nothing was queued since): the
    /// action pump then skips its query.
    var actionOutboxMayHaveWork = true
    /// `read_receipts`: tell senders when the local user read their messages.
    var sendsReadReceipts = true
    /// The receive quota's counts and the strangers' rate.
    let quota: ReceiveQuotaDriver
    /// When the words of deleted messages are purged from the search index.
    private var erasurePurge = ErasurePurgeSchedule()

    init(
        store: Store, directory: PeerDirectory, loop: EventLoop, clock: any NodeClock, log: Logger,
        purgeSearchIndex: (() throws -> Void)? = nil
    ) {
        self.loop = loop
        self.clock = clock
        self.log = log
        self.quota = ReceiveQuotaDriver(store: store, directory: directory)
        self.purgeSearchIndex = purgeSearchIndex ?? { try store.purgeErasedTextFromSearchIndex() }
    }

    // MARK: Erasure

    /// A delete erased a text: purge its words from the search index now or, if one ran
    /// lately, once the schedule's interval is over (`ErasurePurgeSchedule`).
    func deleteApplied() {
        switch erasurePurge.deleteApplied(now: clock.monotonicNow()) {
        case .purgeNow:
            purge()
        case .purgeAt(let due):
            loop.scheduleTask(deadline: due.deadline) { [weak self] in
                guard let self, self.erasurePurge.isPending else { return }
                self.erasurePurge.purged(now: self.clock.monotonicNow())
                self.purge()
            }
        case .alreadyScheduled:
            break
        }
    }

    /// Before the store closes: a purge still owed runs now (a deleted text's words must
    /// not outlive the run in the search index).
    func purgeIfOwed() {
        guard erasurePurge.isPending else { return }
        erasurePurge.purged(now: clock.monotonicNow())
        purge()
    }

    private func purge() {
        do { try purgeSearchIndex() } catch {
            log.error(
                "could not purge deleted messages' words from the search index; retried at the next delete",
                ["error": "\(error)"])
        }
    }
}
