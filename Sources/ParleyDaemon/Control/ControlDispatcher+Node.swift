import ParleyControlProtocol
import ParleyCore
import ParleyStore

/// The node's own methods: `node.status`, `node.rotate_key`, `node.set_status`,
/// `doctor.peer` (`doctor.report` is below `ControlDispatcher`).
extension ControlDispatcher {
    func nodeStatus(id: JSONRPCID?) -> Reply {
        let counts = (try? node.store.counts()) ?? (queued: 0, delivered: 0, received: 0)
        let known = ((try? node.store.peers()) ?? []).filter { $0.replacedBy == nil }.count
        return .typed(
            id: id,
            result: NodeStatusResult(
                version: DaemonRuntimeInfo.version, name: node.ownIdentity.card.displayName,
                fingerprint: node.fingerprint.description, listen: info.listenAddresses,
                peersOnline: node.sessionDriver.table.count, peersKnown: known, queued: counts.queued,
                uptimeSeconds: node.ownIdentity.uptimeSeconds, mdns: info.mdns,
                reachableAt: Node.listeningEndpoints(info.listenAddresses).map(\.description)))
    }

    func nodeRotateKey(id: JSONRPCID?) throws -> Reply {
        let notified = try rotateKey()
        return .typed(
            id: id,
            result: NodeRotateKeyResult(
                noiseKey: node.ownIdentity.card.noiseKey.hex,
                cardSequence: Int(clamping: node.ownIdentity.card.sequence),
                peersNotified: notified))
    }

    /// `node.rotate_key`, its failure named for the step that failed: a key file that
    /// could not be written leaves the old key in place; a card that could not be stored
    /// leaves the new key in use but unannounced.
    private func rotateKey() throws -> Int {
        do {
            return try node.rotateNoiseKey()
        } catch let e as KeyFileError {
            throw ControlFailure.keyNotRotated(reason: e.description)
        } catch NodeError.noStateDirectory {
            throw ControlFailure.keyNotRotated(reason: NodeError.noStateDirectory.description)
        } catch let e as NodeError {
            throw ControlFailure.cardNotReissued(reason: Self.reason(e))
        } catch {
            throw ControlFailure.cardNotReissued(reason: "\(error)")
        }
    }

    func nodeSetStatus(_ p: NodeSetStatusParams, id: JSONRPCID?) throws -> Reply {
        let (status, told) = try node.setStatus(p.status)
        return .typed(id: id, result: NodeSetStatusResult(status: status.text, peersNotified: told))
    }

    func doctorPeer(_ p: DoctorPeerParams, id: JSONRPCID?) throws -> Reply {
        let peer = try node.resolvePeer(p.peer)
        return .typed(id: id, result: node.doctorPeer(peer, mdns: info.mdns))
    }
}
