import Foundation
import NIOCore
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// What the control methods can see of the daemon beyond the node.
final class DaemonRuntimeInfo: @unchecked Sendable {
    // Confined to the node's event loop, like the node.
    var listenAddresses: [String] = []
    var mdns: MDNSState = .off
    static let version = ParleyVersion.string
}

/// Maps JSON-RPC methods onto the node. Runs on the node's event loop.
struct ControlDispatcher {
    let node: Node
    let info: DaemonRuntimeInfo

    enum Reply {
        case now(JSONRPCResponse)
        /// A success encoded straight from its typed result (`JSONRPCTypedSuccess`), with
        /// no `JSONValue` tree in between: the same bytes, a fraction of the work.
        case typed(id: JSONRPCID?, result: any Encodable & Sendable)
        /// The answer comes later (messages.send with wait): the connection keeps the id.
        case deferred
        /// `peers.connect` with `wait`: the connection answers when the dial of this target
        /// ends or after `timeoutMs`.
        case awaitDial(DialTargetKey, address: String, timeoutMs: Int)
        /// The connection becomes a subscriber (resuming after `since`); it answers itself.
        case subscribe(filterIdentity: String?, since: Int?)
    }

    func handle(_ request: JSONRPCRequest, deliveryWaiter: (String, Int, JSONRPCID?) -> Void) -> Reply {
        let id = request.id
        // Room methods, and messages.* aimed at a #room (ControlDispatcher+Rooms.swift).
        if let reply = handleRooms(request, deliveryWaiter: deliveryWaiter) { return reply }
        do {
            switch request.method {
            case ControlMethod.nodeStatus:
                _ = try request.decodeParams(NodeStatusParams.self)
                let counts = (try? node.store.counts()) ?? (queued: 0, delivered: 0, received: 0)
                let known = ((try? node.store.peers()) ?? []).filter { $0.replacedBy == nil }.count
                let uptime = node.uptimeSeconds
                return .typed(id: id, result: NodeStatusResult(
                    version: DaemonRuntimeInfo.version, name: node.card.displayName,
                    fingerprint: node.fingerprint.description, listen: info.listenAddresses,
                    peersOnline: node.sessions.count, peersKnown: known, queued: counts.queued,
                    uptimeSeconds: uptime, mdns: info.mdns))
            case ControlMethod.nodeWhoami:
                _ = try request.decodeParams(NodeWhoamiParams.self)
                return .typed(id: id, result: node.whoami())
            case ControlMethod.peersList:
                _ = try request.decodeParams(PeersListParams.self)
                return .typed(id: id, result: PeersListResult(peers: try node.peerInfos()))
            case ControlMethod.peersConnect:
                let p = try request.decodeParams(PeersConnectParams.self)
                let key = try node.connect(address: p.address)
                if p.effectiveWait { return .awaitDial(key, address: p.address, timeoutMs: p.effectiveTimeoutMs) }
                return .typed(id: id, result: PeersConnectResult(address: p.address, status: .dialing))
            case ControlMethod.messagesSend:
                let p = try request.decodeParams(MessagesSendParams.self)
                let peer = try node.resolvePeer(p.to)
                let stored = try node.send(to: peer, body: p.body)
                if p.effectiveWait {
                    deliveryWaiter(stored.id, p.effectiveTimeoutMs, id)
                    return .deferred
                }
                return .typed(id: id, result: MessagesSendResult(message: node.messageInfo(stored),
                                                                 peerOnline: node.isOnline(peer.identity)))
            case ControlMethod.messagesList:
                let p = try request.decodeParams(MessagesListParams.self)
                let peer = try p.peer.map { (q: String) throws(NodeError) in try node.resolvePeer(q) }
                return .typed(id: id, result: try historyPage(p, scope: peer.map { .peer($0.identity) } ?? .everything))
            case ControlMethod.messagesSubscribe:
                let p = try request.decodeParams(MessagesSubscribeParams.self)
                let peer = try p.peer.map { (q: String) throws(NodeError) in try node.resolvePeer(q) }
                return .subscribe(filterIdentity: peer?.identity, since: p.since)
            case ControlMethod.messagesMarkRead:
                let p = try request.decodeParams(MessagesMarkReadParams.self)
                let peer = try node.resolvePeer(p.peer)
                let (marked, unread) = try node.markRead(peer, upTo: p.upTo.map { Int64($0) })
                return .typed(id: id, result: MessagesMarkReadResult(marked: marked, unread: unread))
            case ControlMethod.trustVerify:
                let p = try request.decodeParams(TrustVerifyParams.self)
                let peer = try node.resolvePeer(p.peer)
                let updated = try node.verify(peer, fingerprint: p.fingerprint)
                return .typed(id: id, result: TrustVerifyResult(peer: node.peerInfo(updated)))
            case ControlMethod.trustAcceptChange:
                let p = try request.decodeParams(TrustAcceptChangeParams.self)
                let peer = try node.resolvePeer(p.peer)
                let (rec, moved) = try node.acceptKeyChange(peer)
                return .typed(id: id, result: TrustAcceptChangeResult(peer: node.peerInfo(rec), retargeted: moved))
            case ControlMethod.nodeRotateKey:
                _ = try request.decodeParams(NodeRotateKeyParams.self)
                let notified: Int
                do { notified = try node.rotateNoiseKey() } catch let e as NodeError { throw e } catch {
                    throw NodeError.storage(.io(path: node.stateDirectory ?? "?", reason: "\(error)"))
                }
                return .typed(id: id, result: NodeRotateKeyResult(
                    noiseKey: node.card.noiseKey.hex, cardSequence: Int(clamping: node.card.sequence), peersNotified: notified))
            default:
                return .now(JSONRPCResponse(id: id, error: .methodNotFound(request.method)))
            }
        } catch let e as JSONRPCError {
            return .now(JSONRPCResponse(id: id, error: e))
        } catch let e as NodeError {
            return .now(JSONRPCResponse(id: id, error: Self.rpcError(e, node: node)))
        } catch {
            return .now(JSONRPCResponse(id: id, error: .internalError("\(error)")))
        }
    }

    /// `messages.list` for a scope: the store's page with its older/newer cursors.
    func historyPage(_ p: MessagesListParams, scope: HistoryScope) throws(NodeError) -> MessagesListResult {
        let page: HistoryPage
        do {
            page = try node.store.historyPage(scope, after: p.after.map { Int64($0) },
                                              before: p.before.map { Int64($0) }, limit: p.effectiveLimit)
        } catch { throw NodeError.storage(error) }
        return MessagesListResult(messages: page.messages.map(node.messageInfo), hasOlder: page.hasOlder,
                                  hasNewer: page.hasNewer, pagedForward: p.pagesForward,
                                  requestedAfter: p.after, requestedBefore: p.before)
    }

    /// Several `messages.send` requests stored in one transaction, answered in order.
    /// Successes are encoded straight from `MessagesSendResult` (the hot path of a
    /// pipelining client), errors as usual.
    enum BatchAnswer {
        case sent(JSONRPCTypedSuccess<MessagesSendResult>)
        case failed(JSONRPCResponse)
    }

    func sendBatch(_ sends: [(JSONRPCRequest, MessagesSendParams)]) -> [BatchAnswer] {
        var responses = [BatchAnswer?](repeating: nil, count: sends.count)
        var items: [(PeerRecord, String)] = []
        var index: [Int] = []
        for (i, (request, params)) in sends.enumerated() {
            do {
                items.append((try node.resolvePeer(params.to), params.body))
                index.append(i)
            } catch {
                responses[i] = .failed(JSONRPCResponse(id: request.id, error: Self.rpcError(error, node: node)))
            }
        }
        for (k, result) in node.sendMany(items).enumerated() {
            let i = index[k]
            switch result {
            case .success(let m):
                responses[i] = .sent(JSONRPCTypedSuccess(id: sends[i].0.id, result: MessagesSendResult(
                    message: node.messageInfo(m), peerOnline: node.isOnline(m.recipient))))
            case .failure(let e):
                responses[i] = .failed(JSONRPCResponse(id: sends[i].0.id, error: Self.rpcError(e, node: node)))
            }
        }
        return responses.map { $0 ?? .failed(JSONRPCResponse(id: nil, error: .internalError("no answer"))) }
    }

    static func rpcError(_ e: NodeError, node: Node) -> JSONRPCError {
        switch e {
        case .peerNotFound(let q): return .peerNotFound(q)
        case let .peerAmbiguous(q, c):
            return .peerAmbiguous(q, candidates: c.map { PeerCandidate(name: $0.displayName, fingerprint: Node.fingerprint(ofHex: $0.identity)) })
        case .keyChangePending: return JSONRPCError(.peerKeyChanged, e.description)
        case .bodyTooLarge(let n): return .bodyTooLarge(bytes: n, maxBytes: WireLimits.maxBodyBytes)
        case .emptyBody: return .invalidParams(e.description)
        case .storage: return JSONRPCError(.storageFailed, e.description)
        case .fingerprintMismatch: return JSONRPCError(.fingerprintMismatch, e.description)
        case .noPendingKeyChange: return JSONRPCError(.peerNotFound, e.description)
        case .invalidAddress: return JSONRPCError(.invalidAddress, e.description)
        case .queueFull: return JSONRPCError(.storageFailed, e.description)
        case .storedCardUnreadable, .noStateDirectory: return JSONRPCError(.storageFailed, e.description)
        }
    }
}
