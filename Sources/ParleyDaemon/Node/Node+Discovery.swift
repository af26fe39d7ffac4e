import NIOCore
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore

/// Dial targets found by mDNS. Discovery says where a node might be; the
/// handshake says who it is.
extension Node {
    func discovered(instance: String, addresses: [String], port: UInt16, fingerprintHint: String?, version: String?) {
        loop.preconditionInEventLoop()
        if instance == ownInstanceName { return }
        if let hint = fingerprintHint, hint == fingerprint.compact { return }
        if let version, version != "1" {
            log.debug("ignoring an advertisement for another protocol version", ["instance": instance, "v": version])
            return
        }
        let candidates = addresses.compactMap { try? HostPort(host: $0, port: port) }.map(DialAddress.init)
        guard !candidates.isEmpty else { return }
        perform(dialPlanner.addDiscovered(DialTargetKey(mdnsInstance: instance), candidates: candidates,
                                          fingerprintHint: fingerprintHint, sessions: sessionView))
    }

    func discoveryLost(instance: String) {
        loop.preconditionInEventLoop()
        perform(dialPlanner.remove(DialTargetKey(mdnsInstance: instance)))
    }
}
