import CDNSSD
import Dispatch

/// One DNSServiceRef driven by a read source on the discovery queue.
///
/// The ref's socket becomes readable when results are waiting; the source then calls
/// DNSServiceProcessResult on our serial queue, which invokes the C callback there. No
/// polling, and no thread of ours. (avahi's compat library itself runs one helper thread
/// per DNSServiceRef, which talks to avahi-daemon over D-Bus and wakes that socket.)
///
/// Deallocation happens in the source's cancel handler: the ref owns the descriptor the
/// source watches, so it may only be closed once the source has let go of it. Everything
/// here is used on the queue only (hence `@unchecked Sendable`: it may be handed to a
/// block that runs there).
final class ServiceRefSource: @unchecked Sendable {
    /// The object the C callback's context pointer refers to (passed unretained): kept
    /// alive until the ref is deallocated, and compared by identity to drop callbacks
    /// from a ref that has been replaced.
    let context: CallbackContext
    private let source: DispatchSourceRead
    private var cancelled = false
    private var deallocated = false
    private var afterDeallocation: [() -> Void] = []

    /// - Parameters:
    ///   - onProcessError: DNSServiceProcessResult failed (the compat library's helper
    ///     thread or its connection died); called once, and no further results follow.
    ///   - onDeallocated: called after DNSServiceRefDeallocate.
    init(
        ref: DNSServiceRef, context: CallbackContext, queue: DispatchQueue,
        onProcessError: @escaping (DNSServiceErrorType) -> Void,
        onDeallocated: @escaping () -> Void
    ) {
        self.context = context
        source = DispatchSource.makeReadSource(fileDescriptor: DNSServiceRefSockFD(ref), queue: queue)
        // The handlers hold `self` until the source is cancelled: the source, not its
        // owner, decides when the ref may go.
        source.setEventHandler { [self] in
            guard !cancelled else { return }
            let status = DNSServiceProcessResult(ref)
            if status != DNSSDStatus.noError, !cancelled {
                cancel()
                onProcessError(status)
            }
        }
        source.setCancelHandler { [self] in
            DNSServiceRefDeallocate(ref)  // withdraws a registration, stops a browse/resolve
            deallocated = true
            onDeallocated()
            let waiting = afterDeallocation
            afterDeallocation.removeAll()
            waiting.forEach { $0() }
        }
        source.resume()
    }

    /// Stops delivering results and deallocates the ref (soon, on the queue). Safe to
    /// call more than once and from inside the ref's own callback.
    func cancel() {
        guard !cancelled else { return }
        cancelled = true
        source.cancel()
    }

    /// Runs `action` once the ref has been deallocated (at once if it already has).
    func whenDeallocated(_ action: @escaping () -> Void) {
        if deallocated { action() } else { afterDeallocation.append(action) }
    }
}
