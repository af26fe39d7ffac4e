import CDNSSD
import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Advertises this node and browses for other Parley nodes over DNS-SD (avahi's dns_sd
/// compat library), reporting ``DiscoveryEvent``s on the given serial queue.
///
/// - Browse: every added `_parley._tcp` instance except our own is resolved
///   (DNSServiceResolve: host target, port, TXT) and the resolver kept running, so changes
///   are re-sent; the host target is then looked up with getaddrinfo on one dedicated
///   serial queue. `.found` is sent when a peer first has addresses and whenever it
///   changes; `.lost` when the last sighting of an instance is removed.
/// - Outages: when avahi-daemon cannot be reached at start, or a ref reports an error
///   later (avahi restarted or died), `.unavailable` is sent once, everything is torn
///   down and retried every `retryInterval`; when that works, `.available` is sent and we
///   re-register and re-browse (so `.found` comes again for peers still there).
/// - Conflicts: avahi renames a network conflict itself ("name #2"); a local one comes
///   back as kDNSServiceErr_NameConflict and we pick the next name. Either way
///   `.registered` carries the final name and we keep serving under it.
///
/// All state lives on `queue`; the public methods may be called from any thread. Stopping
/// is asynchronous (deallocating a ref joins the compat library's helper thread): use
/// ``stop(completion:)`` to know when the advertisement has been withdrawn.
///
/// avahi's compat library prints a warning to stderr when it is first used unless
/// AVAHI_COMPAT_NOWARN is set: see ``silenceAvahiCompatibilityWarning()``.
public final class MDNSDiscovery: @unchecked Sendable {
    /// After avahi comes back, a peer seen before the outage that has not been re-found
    /// within this window is reported lost: mDNS answers arrive within about a second,
    /// and a peer that is still there answers the new browse well within five.
    public static let reconfirmationWindow: Duration = .seconds(5)
    /// A failed address lookup is retried this many times (every `retryInterval`): the
    /// host's address record can trail its service records by a moment.
    static let maxAddressLookupAttempts = 3
    /// The only domain Parley uses: link-local multicast DNS.
    static let domain = "local."

    private let queue: DispatchQueue
    private let browseEnabled: Bool
    private let retryInterval: Duration
    private let onEvent: @Sendable (DiscoveryEvent) -> Void
    private let addressLookup = AddressLookup()

    // Everything below is touched only on `queue`.
    private var advertisement: ServiceAdvertisement?
    private enum Phase { case idle, running, outage }
    private var phase = Phase.idle
    /// Bumped on every tear-down: callbacks and timers of an older generation are ignored.
    private var generation: UInt64 = 0
    /// Our registration: its ref, the name asked for and the name avahi confirmed.
    private var registrar = Registrar()
    /// The browse, the instances it sees, their resolvers and what was reported of them.
    private var browsing = Browsing()
    /// getaddrinfo lookups of resolved host targets.
    private var lookups = Lookups()
    /// Refs not yet deallocated, and what waits for there to be none.
    private var refs = LiveRefs()

    private struct Registrar {
        var registration: ServiceRefSource?
        /// The name we are registering under (requested, or our pick after a local conflict).
        var registeringName: String?
        /// The name avahi confirmed in the last register callback.
        var registeredName: String?
        var conflictRenames = 0
    }

    private struct Browsing {
        var browse: ServiceRefSource?
        var presence = BrowsePresence()
        var resolvers: [String: Resolver] = [:]
        var resolved: [String: ResolvedService] = [:]
        var emitted: [String: DiscoveredPeer] = [:]
        /// Peers reported found before the current outage, not yet re-found.
        var unconfirmed: Set<String> = []
    }

    private struct Lookups {
        var lookupsInFlight: Set<String> = []
        var lookupAgain: Set<String> = []
        var lookupFailures: [String: Int] = [:]
    }

    private struct LiveRefs {
        var liveRefs = 0
        var afterAllDeallocated: [() -> Void] = []
    }

    private struct Resolver {
        let source: ServiceRefSource
        let interface: UInt32
    }

    private struct ResolvedService {
        var hostTarget: String
        var port: UInt16
        var txt: [String: String]
        var interface: UInt32
    }

    /// - Parameters:
    ///   - advertisement: what to register, or nil to only browse.
    ///   - browse: whether to look for other nodes.
    ///   - queue: a serial queue; every event is delivered on it.
    ///   - retryInterval: how often to retry while avahi-daemon is unreachable.
    public init(
        advertisement: ServiceAdvertisement?, browse: Bool = true, queue: DispatchQueue,
        retryInterval: Duration = .seconds(2),
        onEvent: @escaping @Sendable (DiscoveryEvent) -> Void
    ) {
        self.advertisement = advertisement
        self.browseEnabled = browse
        self.queue = queue
        self.retryInterval = retryInterval
        self.onEvent = onEvent
        _ = Self.zeroingAllocatorInstalled
    }

    /// avahi's compat library reads callback fields it never initialized when avahi-daemon
    /// goes away (see `parley_avahi_use_zeroing_allocator` in CDNSSD/shim.h): every
    /// allocation avahi makes must be zeroed. Installed once per process, before the first
    /// DNSService call; memory avahi got from libc before that is freed with libc's free,
    /// which is what the allocator uses too.
    static let zeroingAllocatorInstalled: Bool = {
        parley_avahi_use_zeroing_allocator()
        return true
    }()

    deinit {
        // Without stop(), refs would keep running (their sources hold themselves until
        // cancelled): withdraw them. Only the sources are captured, not self.
        let sources =
            [registrar.registration, browsing.browse].compactMap { $0 } + browsing.resolvers.values.map(\.source)
        if !sources.isEmpty { queue.async { sources.forEach { $0.cancel() } } }
    }

    /// Sets AVAHI_COMPAT_NOWARN so avahi's compat library does not print its "uses the
    /// Apple Bonjour compatibility layer" warning. setenv is not thread-safe: call this
    /// at process start, before other threads run.
    public static func silenceAvahiCompatibilityWarning() {
        setenv("AVAHI_COMPAT_NOWARN", "1", 0)
    }

    /// Starts advertising and browsing. Calling it again while running does nothing.
    public func start() {
        queue.async { [self] in
            guard phase == .idle else { return }
            phase = .running
            bringUp()
        }
    }

    /// Re-registers with a new name, port or TXT, once the old registration is withdrawn
    /// (so an unchanged name cannot collide with itself). Browsers see a new name as
    /// `.lost` + `.found`, and the same name as `.found` with the new port/TXT. Also starts
    /// advertising if `advertisement` was nil.
    public func updateAdvertisement(_ ad: ServiceAdvertisement) {
        queue.async { [self] in
            guard ad != advertisement else { return }
            advertisement = ad
            registrar.registeringName = nil
            registrar.conflictRenames = 0
            guard phase == .running else { return }  // idle: start() uses it; outage: the retry does
            restartRegistration()
        }
    }

    /// Withdraws the advertisement and stops browsing (DNSServiceRefDeallocate), without
    /// sending events. Asynchronous; `start()` may be called again afterwards.
    public func stop() { stop(completion: nil) }

    /// Like ``stop()``; `completion` runs on the queue once every ref is deallocated (the
    /// registration withdrawn: avahi sends its goodbye packets). If `start()` is called
    /// again before that, it waits for the new refs to be stopped too.
    public func stop(completion: (@Sendable () -> Void)?) {
        queue.async { [self] in
            phase = .idle
            tearDown()
            browsing.unconfirmed.removeAll()
            registrar.registeringName = nil
            registrar.registeredName = nil
            registrar.conflictRenames = 0
            if let completion { whenAllDeallocated(completion) }
        }
    }

    // MARK: - Lifecycle (on queue)

    /// Creates the registration and the browse; on failure enters (or stays in) outage.
    private func bringUp() {
        let generation = generation
        if browseEnabled {
            let status = startBrowse()
            guard status == DNSSDStatus.noError else {
                return enterOutage(DNSSDStatus.unavailableReason("DNSServiceBrowse", status))
            }
        }
        if advertisement != nil {
            let status = startRegistration()
            guard status == DNSSDStatus.noError else {
                return enterOutage(DNSSDStatus.unavailableReason("DNSServiceRegister", status))
            }
        }
        // A failure inside (a conflict rename that could not register) already entered
        // the outage and scheduled the retry.
        guard generation == self.generation else { return }
        if phase == .outage {
            phase = .running
            emit(.available)
            scheduleReconfirmation()
        }
    }

    /// Cancels every ref and forgets what they reported. Peers already reported stay in
    /// `unconfirmed` until re-found or the reconfirmation window ends.
    private func tearDown() {
        generation &+= 1
        registrar.registration?.cancel()
        registrar.registration = nil
        browsing.browse?.cancel()
        browsing.browse = nil
        browsing.resolvers.values.forEach { $0.source.cancel() }
        browsing.resolvers.removeAll()
        browsing.presence.removeAll()
        browsing.resolved.removeAll()
        browsing.unconfirmed.formUnion(browsing.emitted.keys)
        browsing.emitted.removeAll()
        lookups.lookupsInFlight.removeAll()
        lookups.lookupAgain.removeAll()
        lookups.lookupFailures.removeAll()
    }

    private func enterOutage(_ reason: String) {
        tearDown()
        if phase != .outage {
            phase = .outage
            emit(.unavailable(reason: reason))
        }
        let generation = generation
        queue.asyncAfter(deadline: .now() + Self.dispatchInterval(retryInterval)) { [weak self] in
            guard let self, self.generation == generation, self.phase == .outage else { return }
            self.bringUp()
        }
    }

    private func scheduleReconfirmation() {
        let generation = generation
        queue.asyncAfter(deadline: .now() + Self.dispatchInterval(Self.reconfirmationWindow)) { [weak self] in
            guard let self, self.generation == generation else { return }
            for name in self.browsing.unconfirmed.sorted() where self.browsing.emitted[name] == nil {
                self.emit(.lost(instanceName: name))
            }
            self.browsing.unconfirmed.removeAll()
        }
    }

    private func makeSource(
        _ ref: DNSServiceRef, _ context: CallbackContext,
        onError: @escaping (DNSServiceErrorType) -> Void
    ) -> ServiceRefSource {
        refs.liveRefs += 1
        return ServiceRefSource(
            ref: ref, context: context, queue: queue, onProcessError: onError,
            onDeallocated: { [weak self] in self?.refDeallocated() })
    }

    private func refDeallocated() {
        refs.liveRefs -= 1
        guard refs.liveRefs == 0 else { return }
        let waiting = refs.afterAllDeallocated
        refs.afterAllDeallocated.removeAll()
        waiting.forEach { $0() }
    }

    /// Runs `action` on the queue once every ref has been deallocated.
    private func whenAllDeallocated(_ action: @escaping () -> Void) {
        if refs.liveRefs == 0 { action() } else { refs.afterAllDeallocated.append(action) }
    }

    // MARK: - Registration (on queue)

    private func startRegistration() -> DNSServiceErrorType {
        guard let ad = advertisement else { return DNSSDStatus.noError }
        let name = registrar.registeringName ?? InstanceName.truncated(ad.instanceName)
        registrar.registeringName = name
        let txt = TXTRecord.encode(ad.txt)
        let context = CallbackContext(owner: self, generation: generation)
        var ref: DNSServiceRef?
        // An empty name asks avahi for the host name (DNS-SD convention).
        let status = withOptionalCString(name.isEmpty ? nil : name) { cName in
            txt.withUnsafeBytes { txtBytes in
                DNSServiceRegister(
                    &ref, 0, UInt32(kDNSServiceInterfaceIndexAny), cName, ServiceAdvertisement.serviceType,
                    nil, nil, ad.port.bigEndian, UInt16(txtBytes.count), txtBytes.baseAddress,
                    { _, _, status, name, _, _, context in
                        guard let context else { return }
                        let ctx = Unmanaged<CallbackContext>.fromOpaque(context).takeUnretainedValue()
                        ctx.owner?.registerReply(ctx, status: status, name: name.map { String(cString: $0) })
                    },
                    Unmanaged.passUnretained(context).toOpaque())
            }
        }
        if status == DNSSDStatus.nameConflict {
            return renameAfterConflict()
        }
        guard status == DNSSDStatus.noError, let ref else {
            return status == DNSSDStatus.noError ? DNSSDStatus.unknown : status
        }
        registrar.registration = makeSource(ref, context) { [weak self] status in
            guard let self, self.generation == context.generation else { return }
            self.enterOutage(DNSSDStatus.unavailableReason("DNSServiceProcessResult (registration)", status))
        }
        return DNSSDStatus.noError
    }

    private func registerReply(_ context: CallbackContext, status: DNSServiceErrorType, name: String?) {
        guard context.generation == generation, registrar.registration?.context === context else { return }
        switch status {
        case DNSSDStatus.noError:
            let final = name ?? registrar.registeringName ?? ""
            registrar.conflictRenames = 0
            registrar.registeringName = final
            registrar.registeredName = final
            emit(.registered(instanceName: final))
            reconcileOwnName()
        case DNSSDStatus.nameConflict:
            let status = renameAfterConflict()
            if status != DNSSDStatus.noError {
                enterOutage(DNSSDStatus.unavailableReason("DNSServiceRegister", status))
            }
        default:
            enterOutage(DNSSDStatus.unavailableReason("registration", status))
        }
    }

    /// Picks the next name and registers under it once the old ref (if any) is gone.
    private func renameAfterConflict() -> DNSServiceErrorType {
        registrar.conflictRenames += 1
        guard registrar.conflictRenames <= InstanceName.maxConflictRenames else {
            // Start over from the requested name at the next retry.
            registrar.registeringName = nil
            registrar.conflictRenames = 0
            return DNSSDStatus.nameConflict
        }
        registrar.registeringName = InstanceName.alternative(to: registrar.registeringName ?? "")
        restartRegistration()
        return DNSSDStatus.noError
    }

    /// Withdraws the registration and registers `advertisement` (under `registeringName`)
    /// once avahi has let go of the old one, so the same name cannot collide with itself.
    private func restartRegistration() {
        let old = registrar.registration
        old?.cancel()
        registrar.registration = nil
        let generation = generation
        let register = { [weak self] in
            guard let self, self.generation == generation, self.phase != .idle, self.registrar.registration == nil
            else { return }
            let status = self.startRegistration()
            if status != DNSSDStatus.noError {
                self.enterOutage(DNSSDStatus.unavailableReason("DNSServiceRegister", status))
            }
        }
        if let old { old.whenDeallocated(register) } else { register() }
    }

    // MARK: - Browse and resolve (on queue)

    /// Our own instance, confirmed or being registered, is never reported as a peer.
    private func isOwn(_ name: String) -> Bool {
        advertisement != nil && (name == registrar.registeredName || name == registrar.registeringName)
    }

    /// After our name changed: stop treating a former own name as ours, and a new one
    /// as a peer.
    private func reconcileOwnName() {
        for name in browsing.presence.names {
            if isOwn(name) {
                emit(.ownAdvertisementBrowsed(instanceName: name))
                forget(name)
                if browsing.emitted.removeValue(forKey: name) != nil { emit(.lost(instanceName: name)) }
            } else if browsing.resolvers[name] == nil {
                startResolve(name)
            }
        }
    }

    private func startBrowse() -> DNSServiceErrorType {
        let context = CallbackContext(owner: self, generation: generation)
        var ref: DNSServiceRef?
        let status = DNSServiceBrowse(
            &ref, 0, UInt32(kDNSServiceInterfaceIndexAny), ServiceAdvertisement.serviceType, Self.domain,
            { _, flags, interface, status, name, _, _, context in
                guard let context else { return }
                let ctx = Unmanaged<CallbackContext>.fromOpaque(context).takeUnretainedValue()
                ctx.owner?.browseReply(
                    ctx, flags: flags, interface: interface, status: status,
                    name: name.map { String(cString: $0) })
            },
            Unmanaged.passUnretained(context).toOpaque())
        guard status == DNSSDStatus.noError, let ref else {
            return status == DNSSDStatus.noError ? DNSSDStatus.unknown : status
        }
        browsing.browse = makeSource(ref, context) { [weak self] status in
            guard let self, self.generation == context.generation else { return }
            self.enterOutage(DNSSDStatus.unavailableReason("DNSServiceProcessResult (browse)", status))
        }
        return DNSSDStatus.noError
    }

    private func browseReply(
        _ context: CallbackContext, flags: DNSServiceFlags, interface: UInt32,
        status: DNSServiceErrorType, name: String?
    ) {
        guard context.generation == generation, browsing.browse?.context === context else { return }
        guard status == DNSSDStatus.noError else {
            return enterOutage(DNSSDStatus.unavailableReason("browse", status))
        }
        guard let name, !name.isEmpty else { return }
        if flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0 {
            if browsing.presence.add(name, interface: interface) {
                if isOwn(name) { emit(.ownAdvertisementBrowsed(instanceName: name)) } else { startResolve(name) }
            }
        } else if browsing.presence.remove(name, interface: interface) {
            forget(name)
            if browsing.emitted.removeValue(forKey: name) != nil { emit(.lost(instanceName: name)) }
        } else if let resolver = browsing.resolvers[name],
            !browsing.presence.interfaces(of: name).contains(resolver.interface)
        {
            // Still seen, but no longer where we resolved it: resolve it where it is.
            forget(name)
            startResolve(name)
        }
    }

    /// Stops resolving `name` and drops what we learned about it.
    private func forget(_ name: String) {
        browsing.resolvers.removeValue(forKey: name)?.source.cancel()
        browsing.resolved[name] = nil
    }

    private func startResolve(_ name: String) {
        guard browsing.resolvers[name] == nil, let interface = browsing.presence.interfaces(of: name).first else {
            return
        }
        let context = CallbackContext(owner: self, generation: generation, instanceName: name)
        var ref: DNSServiceRef?
        let status = DNSServiceResolve(
            &ref, 0, interface, name, ServiceAdvertisement.serviceType, Self.domain,
            { _, _, interface, status, _, host, port, txtLength, txt, context in
                guard let context else { return }
                let ctx = Unmanaged<CallbackContext>.fromOpaque(context).takeUnretainedValue()
                let txtBytes = txt.map { Array(UnsafeBufferPointer(start: $0, count: Int(txtLength))) } ?? []
                ctx.owner?.resolveReply(
                    ctx, interface: interface, status: status,
                    host: host.map { String(cString: $0) },
                    port: UInt16(bigEndian: port), txt: txtBytes)
            },
            Unmanaged.passUnretained(context).toOpaque())
        guard status == DNSSDStatus.noError, let ref else {
            // The browse reports avahi itself going away; this one instance is retried.
            return scheduleResolveRetry(name)
        }
        let source = makeSource(ref, context) { [weak self] _ in
            self?.resolverFailed(context)
        }
        browsing.resolvers[name] = Resolver(source: source, interface: interface)
    }

    private func resolveReply(
        _ context: CallbackContext, interface: UInt32, status: DNSServiceErrorType,
        host: String?, port: UInt16, txt: [UInt8]
    ) {
        guard context.generation == generation, let name = context.instanceName,
            browsing.resolvers[name]?.source.context === context
        else { return }
        guard status == DNSSDStatus.noError, let host, !host.isEmpty else { return resolverFailed(context) }
        let hostTarget = host.hasSuffix(".") ? String(host.dropLast()) : host
        browsing.resolved[name] = ResolvedService(
            hostTarget: hostTarget, port: port, txt: TXTRecord.decode(txt),
            interface: interface)
        if let peer = browsing.emitted[name], peer.hostTarget == hostTarget {
            // Same host: its addresses are known; only port or TXT may have changed.
            publish(name, addresses: peer.addresses)
        } else {
            lookUp(hostTarget)
        }
    }

    /// A resolver reported an error (its record expired, or avahi is going away: then the
    /// browse reports that too). Retry while the instance is still browsed.
    private func resolverFailed(_ context: CallbackContext) {
        guard context.generation == generation, let name = context.instanceName,
            browsing.resolvers[name]?.source.context === context
        else { return }
        forget(name)
        scheduleResolveRetry(name)
    }

    private func scheduleResolveRetry(_ name: String) {
        let generation = generation
        queue.asyncAfter(deadline: .now() + Self.dispatchInterval(retryInterval)) { [weak self] in
            guard let self, self.generation == generation, self.browsing.presence.contains(name), !self.isOwn(name)
            else {
                return
            }
            self.startResolve(name)
        }
    }

    // MARK: - Addresses (lookups on the lookup queue, results on queue)

    private func lookUp(_ host: String) {
        guard lookups.lookupsInFlight.insert(host).inserted else {
            lookups.lookupAgain.insert(host)  // the answer in flight may predate this resolve
            return
        }
        let generation = generation
        addressLookup.lookup(host) { [weak self] outcome in
            guard let self else { return }
            self.queue.async { self.lookupFinished(host, outcome, generation: generation) }
        }
    }

    private func lookupFinished(_ host: String, _ outcome: AddressLookup.Outcome, generation: UInt64) {
        guard generation == self.generation else { return }
        lookups.lookupsInFlight.remove(host)
        if lookups.lookupAgain.remove(host) != nil { return lookUp(host) }
        let waiting = browsing.resolved.filter { $0.value.hostTarget == host }.map(\.key).sorted()
        guard !waiting.isEmpty else { return }
        switch outcome {
        case .addresses(let addresses):
            lookups.lookupFailures[host] = nil
            waiting.forEach { publish($0, addresses: addresses) }
        case .failed(let reason):
            let attempts = (lookups.lookupFailures[host] ?? 0) + 1
            lookups.lookupFailures[host] = attempts
            if attempts == 1 { emit(.addressLookupFailed(hostTarget: host, reason: reason)) }
            guard attempts < Self.maxAddressLookupAttempts else { return }
            queue.asyncAfter(deadline: .now() + Self.dispatchInterval(retryInterval)) { [weak self] in
                guard let self, self.generation == generation,
                    self.browsing.resolved.values.contains(where: { $0.hostTarget == host })
                else { return }
                self.lookUp(host)
            }
        }
    }

    /// Sends `.found` for `name` unless nothing changed since the last one.
    private func publish(_ name: String, addresses: [String]) {
        guard let service = browsing.resolved[name], browsing.presence.contains(name), !isOwn(name) else { return }
        let peer = DiscoveredPeer(
            instanceName: name, hostTarget: service.hostTarget, port: service.port,
            txt: service.txt, addresses: addresses, interfaceIndex: service.interface)
        guard browsing.emitted[name] != peer else { return }
        browsing.emitted[name] = peer
        browsing.unconfirmed.remove(name)
        emit(.found(peer))
    }

    private func emit(_ event: DiscoveryEvent) { onEvent(event) }

    static func dispatchInterval(_ duration: Duration) -> DispatchTimeInterval {
        let (seconds, attoseconds) = duration.components
        let nanos = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanos.overflow, seconds >= 0 else { return .never }
        return .nanoseconds(Int(clamping: nanos.partialValue + attoseconds / 1_000_000_000))
    }
}

/// What a C callback's context pointer refers to: which discovery, which generation of
/// its refs, and for a resolver which instance. Held (retained) by the ref's source.
final class CallbackContext {
    weak var owner: MDNSDiscovery?
    let generation: UInt64
    let instanceName: String?

    init(owner: MDNSDiscovery, generation: UInt64, instanceName: String? = nil) {
        self.owner = owner
        self.generation = generation
        self.instanceName = instanceName
    }
}

/// Calls `body` with a C string for `string`, or with nil.
private func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}
