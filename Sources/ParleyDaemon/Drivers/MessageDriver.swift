import NIOCore
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// The message path's drivers beside the direct messages (those are `DirectMessageDriver`'s,
/// with the outbox's counts): the conversation records (`ConversationDriver`: edits,
/// deletes, reactions and their outbox, read receipts, our status line), the receive
/// quota (`ReceiveQuotaDriver`), and when deleted texts' words are purged from the search
/// index (`ErasurePurgeSchedule`).
///
/// `Node+Conversation.swift`, `Node+Quota.swift` and `Node+ReadReceipts.swift` route to
/// them. Its state is its own and lives on the node's event loop (the loop is its lock);
/// the purge's delay runs on the injected clock.
final class MessageDriver {
    private let loop: EventLoop
    private let clock: any NodeClock
    private let log: Logger
    /// Purges erased texts' words from the search index (the store's, in the daemon).
    private let purgeSearchIndex: () throws -> Void

    /// Edits, deletes, reactions, read receipts and our status line.
    let conversation: ConversationDriver<Node>
    /// The receive quota: its counts, the strangers' rate, the verdicts, peers' refusals.
    let quota: ReceiveQuotaDriver
    /// When the words of deleted messages are purged from the search index.
    private var erasurePurge = ErasurePurgeSchedule()

    init(
        store: Store, directory: PeerDirectory, loop: EventLoop, clock: any NodeClock, log: Logger,
        quotaLimits: ReceiveQuota = .standard, attackLog: RateLimitedLog? = nil,
        purgeSearchIndex: (() throws -> Void)? = nil
    ) {
        self.loop = loop
        self.clock = clock
        self.log = log
        self.conversation = ConversationDriver(store: store, loop: loop, clock: clock, log: log, attackLog: attackLog)
        self.quota = ReceiveQuotaDriver(
            store: store, directory: directory, limits: quotaLimits, clock: clock, log: log, attackLog: attackLog)
        self.purgeSearchIndex = purgeSearchIndex ?? { try store.purgeErasedTextFromSearchIndex() }
    }

    /// `read_receipts`: tell senders when the local user read their messages.
    var sendsReadReceipts: Bool {
        get { conversation.sendsReadReceipts }
        set { conversation.sendsReadReceipts = newValue }
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
