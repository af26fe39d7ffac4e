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
        /// The typed result comes later: `start` is called with the function that answers
        /// (on the event loop), e.g. `doctor.report` waiting for a dial-back.
        case later(start: (@escaping (any Encodable & Sendable) -> Void) -> Void)
        /// The connection becomes a subscriber (resuming after `since`); it answers itself.
        case subscribe(filterIdentity: String?, since: Int?)
        /// The answer is computed off the request's turn (`files.send` hashes the file first).
        case future(EventLoopFuture<JSONRPCResponse>)
    }

    /// What `messages.send` with `wait` asks of the connection: (message id, timeout in
    /// milliseconds, request id); the connection answers when the message is delivered.
    typealias DeliveryWaiter = (String, Int, JSONRPCID?) -> Void

    /// Handles a request whose params `ControlCall.decode` has already decoded.
    func handle(_ call: ControlCall, id: JSONRPCID?, deliveryWaiter: DeliveryWaiter) -> Reply {
        do {
            return try perform(call, id: id, deliveryWaiter: deliveryWaiter)
        } catch {
            return .now(JSONRPCResponse(id: id, error: Self.rpcError(error, node: node)))
        }
    }

    private func perform(_ call: ControlCall, id: JSONRPCID?, deliveryWaiter: DeliveryWaiter) throws -> Reply {
        switch call {
        // The node itself (ControlDispatcher+Node.swift).
        case .nodeStatus: return nodeStatus(id: id)
        case .nodeWhoami: return .typed(id: id, result: node.whoami())
        case .nodeRotateKey: return try nodeRotateKey(id: id)
        case .nodeSetStatus(let p): return try nodeSetStatus(p, id: id)
        case .doctorReport(let p): return doctorReport(p, id: id)
        case .doctorPeer(let p): return try doctorPeer(p, id: id)
        // Peers and trust (ControlDispatcher+Peers.swift).
        case .peersList: return .typed(id: id, result: PeersListResult(peers: try node.peerInfos()))
        case .peersConnect(let p): return try peersConnect(p, id: id)
        case .peersNickname(let p): return try peersNickname(p, id: id)
        case .trustVerify(let p): return try trustVerify(p, id: id)
        case .trustShow(let p): return .typed(id: id, result: try node.trustShow(try node.resolvePeer(p.peer)))
        case .trustReplace(let p): return try trustReplace(p, id: id)
        case .trustAccept(let p): return try trustChange(p.peer, id: id, node.accept)
        case .trustBlock(let p): return try trustChange(p.peer, id: id, node.block)
        case .trustUnblock(let p): return try trustChange(p.peer, id: id, node.unblock)
        case .trustForget(let p): return try trustForget(p, id: id)
        // Files (ControlDispatcher+Files.swift).
        case .filesSend, .filesOpen:
            // Normally refused before the params are decoded (ControlConnection); kept exhaustive.
            return .now(JSONRPCResponse(id: id, error: Self.descriptorSocketOnly()))
        case .filesList(let p): return try filesList(p, id: id)
        case .filesAccept(let p): return try fileChanged(id: id, node.acceptFile(p.id))
        case .filesReject(let p): return try fileChanged(id: id, node.rejectFile(p.id))
        case .filesCancel(let p): return try fileChanged(id: id, node.cancelFile(p.id))
        case .filesThumbnail(let p): return try filesThumbnail(p, id: id)
        // Messages.
        case .messagesSend(let p):
            let stored: StoredMessage
            var peerOnline: Bool?
            var roomRecipients: (all: Int, online: Int)?
            if Self.namesRoom(p.to) {
                let room = try node.resolveRoom(p.to)
                stored = try node.sendToRoom(room, body: p.body)
                roomRecipients = node.roomRecipientsOnline(room)
            } else {
                let peer = try node.resolvePeer(p.to)
                stored = try node.send(to: peer, body: p.body)
                peerOnline = node.isOnline(peer.identity)
            }
            // Nothing to wait for: delivered when stored, or written before anyone else has
            // joined the room (it waits for the invited, who get it when they join: no
            // acknowledgement can come before that).
            if p.effectiveWait, stored.state != .delivered, roomRecipients?.all != 0 {
                deliveryWaiter(stored.id, p.effectiveTimeoutMs, id)
                return .deferred
            }
            return .typed(
                id: id,
                result: MessagesSendResult(
                    message: node.messageInfo(stored, justStored: true), peerOnline: peerOnline,
                    roomRecipients: roomRecipients?.all, roomRecipientsOnline: roomRecipients?.online))
        case .messagesList(let p):
            if let selector = p.peer, Self.namesRoom(selector) { return try listRoomMessages(selector, p, id: id) }
            let peer = try p.peer.map { (q: String) throws(NodeError) in try node.resolvePeerIncludingReplaced(q) }
            return .typed(id: id, result: try historyPage(p, scope: peer.map { .peer($0.identity) } ?? .everything))
        case .messagesSearch(let p):
            return .typed(id: id, result: try search(p))
        case .messagesSubscribe(let p):
            if let selector = p.peer, Self.namesRoom(selector) {
                return .subscribe(filterIdentity: try node.resolveRoom(selector).id, since: p.since)
            }
            let peer = try p.peer.map { (q: String) throws(NodeError) in try node.resolvePeer(q) }
            return .subscribe(filterIdentity: peer?.identity, since: p.since)
        case .messagesMarkRead(let p):
            if Self.namesRoom(p.peer) { return try markRoomRead(p, id: id) }
            let peer = try node.resolvePeer(p.peer)
            let (marked, unread) = try node.markRead(peer, upTo: p.upTo.map { Int64($0) })
            return .typed(id: id, result: MessagesMarkReadResult(marked: marked, unread: unread))
        case .messagesForget(let p):
            let peer = try node.resolvePeer(p.peer)
            let deleted = try node.forgetMessages(with: peer)
            return .typed(
                id: id,
                result: MessagesForgetResult(
                    fingerprint: Node.fingerprint(ofHex: peer.identity),
                    deleted: deleted))
        // Rooms (ControlDispatcher+Rooms.swift).
        case .roomsList:
            return try listRooms(id: id)
        case .roomsCreate(let p):
            return try createRoom(p, id: id)
        case .roomsAdd(let p):
            return try addToRoom(p, id: id)
        case .roomsRemove(let p):
            return try removeFromRoom(p, id: id)
        case .roomsLeave(let p):
            return try leaveRoom(p, id: id)
        case .roomsAccept(let p):
            return .typed(
                id: id, result: RoomResult(room: node.roomInfo(try node.acceptInvitation(node.resolveRoom(p.room)))))
        case .roomsDecline(let p):
            return .typed(
                id: id, result: RoomResult(room: node.roomInfo(try node.declineInvitation(node.resolveRoom(p.room)))))
        case .roomsSetRole(let p):
            return try setRole(p, id: id)
        case .roomsRename(let p):
            return try changeRoom(p.room, .rename(p.name), id: id)
        case .roomsSetPolicy(let p):
            return try setRoomPolicy(p, id: id)
        case .messagesReply(let p):
            let stored = try node.reply(to: try node.resolveMessage(p.message), body: p.body)
            return .typed(id: id, result: MessagesSendResult(message: node.messageInfo(stored, justStored: true)))
        case .messagesEdit(let p):
            let updated = try node.perform(.edit(body: p.body), on: try node.resolveMessage(p.message))
            return .typed(id: id, result: MessageChangeResult(message: node.messageInfo(updated)))
        case .messagesDelete(let p):
            let updated = try node.perform(.delete, on: try node.resolveMessage(p.message))
            return .typed(id: id, result: MessageChangeResult(message: node.messageInfo(updated)))
        case .messagesReact(let p):
            let reaction: Reaction
            do { reaction = try Reaction(p.reaction) } catch { throw ConversationError.invalidReaction(error) }
            let updated = try node.perform(
                .reaction(reaction, added: !(p.remove ?? false)),
                on: try node.resolveMessage(p.message))
            return .typed(id: id, result: MessageChangeResult(message: node.messageInfo(updated)))
        }
    }

    /// `messages.list` for a scope: the store's page with its older/newer cursors.
    func historyPage(_ p: MessagesListParams, scope: HistoryScope) throws -> MessagesListResult {
        let page: HistoryPage
        do {
            page = try node.store.historyPage(
                scope, after: p.after.map { Int64($0) }, before: p.before.map { Int64($0) }, limit: p.effectiveLimit)
        } catch { throw ControlFailure.storeRead(what: "the messages", error) }
        return MessagesListResult(
            messages: node.messageInfos(page.messages), hasOlder: page.hasOlder, hasNewer: page.hasNewer,
            pagedForward: p.pagesForward, requestedAfter: p.after, requestedBefore: p.before)
    }

    /// `messages.search`: the store's ranked hits in the conversation or room asked for.
    func search(_ p: MessagesSearchParams) throws -> MessagesSearchResult {
        let scope: HistoryScope
        if let selector = p.peer, Self.namesRoom(selector) {
            scope = .room(try node.resolveRoom(selector).id)
        } else if let selector = p.peer {
            scope = .peer(try node.resolvePeer(selector).identity)
        } else {
            scope = .everything
        }
        let started = ContinuousClock.now
        let hits: [SearchHit]
        do { hits = try node.store.search(p.query, scope: scope, limit: p.effectiveLimit) } catch {
            throw ControlFailure.storeRead(what: "the search index", error)
        }
        let took = ContinuousClock.now - started
        return MessagesSearchResult(
            hits: zip(node.messageInfos(hits.map(\.message)), hits).map {
                MessagesSearchHit(message: $0, snippet: $1.snippet)
            },
            tookMs: Int(took.components.seconds * 1000 + took.components.attoseconds / 1_000_000_000_000_000))
    }

    /// A node error's cause without the "could not store the message" framing of
    /// `NodeError.storage`, for messages that say themselves what failed.
    static func reason(_ e: NodeError) -> String {
        if case .storage(let s) = e { return "\(s)" }
        return e.description
    }

    /// Several `messages.send` requests stored in one transaction, answered in order.
    /// Successes are encoded straight from `MessagesSendResult` (the hot path of a
    /// pipelining client), errors as usual.
    enum BatchAnswer {
        case sent(JSONRPCTypedSuccess<MessagesSendResult>)
        case failed(JSONRPCResponse)
    }

    /// Stores a run of pipelined sends in request order: consecutive direct sends in one
    /// transaction (`Node.sendMany`), a send to a `#room` through the room path (it goes
    /// to every member; resolving `#room` as a peer name would fail it). Answers come
    /// back in request order.
    func sendBatch(_ sends: [(id: JSONRPCID?, params: MessagesSendParams)]) -> [BatchAnswer] {
        var answers: [BatchAnswer] = []
        answers.reserveCapacity(sends.count)
        // Direct sends waiting to be stored together: their index in `answers` and item.
        var direct: [(index: Int, peer: PeerRecord, body: String)] = []
        func storeDirect() {
            guard !direct.isEmpty else { return }
            for (k, result) in node.sendMany(direct.map { ($0.peer, $0.body) }).enumerated() {
                answers[direct[k].index] = answer(result.mapError { $0 as Error }, id: sends[direct[k].index].id)
            }
            direct.removeAll()
        }
        // Room sends likewise (`Node.sendManyToRoom`: one transaction for the run).
        var room: [(index: Int, room: RoomRecord, body: String)] = []
        func storeRoom() {
            guard !room.isEmpty else { return }
            for (k, result) in node.sendManyToRoom(room.map { ($0.room, $0.body, nil) }).enumerated() {
                answers[room[k].index] = answer(result, id: sends[room[k].index].id)
            }
            room.removeAll()
        }
        for (i, send) in sends.enumerated() {
            // A placeholder, replaced below or by `storeDirect` / `storeRoom`.
            answers.append(.failed(JSONRPCResponse(id: send.id, error: .internalError("no answer"))))
            if Self.namesRoom(send.params.to) {
                storeDirect()
                do {
                    room.append((i, try node.resolveRoom(send.params.to), send.params.body))
                } catch {
                    answers[i] = .failed(JSONRPCResponse(id: send.id, error: Self.rpcError(error, node: node)))
                }
                continue
            }
            storeRoom()
            do {
                direct.append((i, try node.resolvePeer(send.params.to), send.params.body))
            } catch {
                answers[i] = .failed(JSONRPCResponse(id: send.id, error: Self.rpcError(error, node: node)))
            }
        }
        storeDirect()
        storeRoom()
        return answers
    }

    private func answer(_ result: Result<StoredMessage, Error>, id: JSONRPCID?) -> BatchAnswer {
        switch result {
        case .success(let m):
            let online = m.room == nil ? node.isOnline(m.recipient) : nil
            return .sent(
                JSONRPCTypedSuccess(
                    id: id,
                    result: MessagesSendResult(message: node.messageInfo(m, justStored: true), peerOnline: online)))
        case .failure(let e):
            return .failed(JSONRPCResponse(id: id, error: Self.rpcError(e, node: node)))
        }
    }

    /// Whether a `to` / `peer` selector names a room (`#name`) rather than a peer.
    static func namesRoom(_ selector: String) -> Bool {
        selector.hasPrefix(roomSelectorPrefix)
    }

    /// The prefix that makes a `to` / `peer` selector name a room.
    static let roomSelectorPrefix = "#"

    /// Every error a method can end in, as the JSON-RPC error the client sees. Each keeps
    /// its own message (which says what to do next); only an error nobody anticipated is
    /// an `internalError`, and it still carries its description.
    /// `files.send` / `files.open` on the control socket: files travel as descriptors (issue
    /// 28), so the daemon never opens a path a client names.
    static func descriptorSocketOnly() -> JSONRPCError {
        JSONRPCError(
            .invalidRequest,
            "files.send and files.open pass open files and are served on the descriptor socket (the control "
                + "socket's path + \"\(ControlSocketPath.descriptorSocketSuffix)\", docs/CONTROL.md \"Descriptor socket\"); "
                + "parleyd never opens a path a client names. `parley send --attach` and `parley get` use it")
    }

    static func rpcError(_ error: Error, node: Node) -> JSONRPCError {
        switch error {
        case let e as JSONRPCError: return e
        case let e as NodeError: return rpcError(e, node: node)
        case let e as RoomError: return rpcError(e)
        case let e as ControlFailure: return JSONRPCError(.storageFailed, e.description)
        case let e as ConversationError: return e.rpcError
        case let e as FileError: return e.rpcError
        default: return .internalError("\(error)")
        }
    }

    static func rpcError(_ e: NodeError, node: Node) -> JSONRPCError {
        switch e {
        case .peerNotFound(let q): return .peerNotFound(q)
        case let .peerAmbiguous(q, c):
            return .peerAmbiguous(
                q,
                candidates: c.map {
                    PeerCandidate(
                        name: $0.label, fingerprint: Node.fingerprint(ofHex: $0.identity),
                        trust: ControlViews.trust($0.trust))
                })
        case .peerBlocked, .peerAwaitingApproval, .peerReplaced: return JSONRPCError(.peerNotTrusted, e.description)
        case .bodyTooLarge(let n): return .bodyTooLarge(bytes: n, maxBytes: WireLimits.maxBodyBytes)
        case .emptyBody: return .invalidParams(e.description)
        case .storage: return JSONRPCError(.storageFailed, e.description)
        case .fingerprintMismatch, .safetyNumberMismatch: return JSONRPCError(.fingerprintMismatch, e.description)
        case .fingerprintTooShort: return .invalidParams(e.description)
        case .newKeyNotFound: return JSONRPCError(.peerNotFound, e.description)
        case .notApplicable: return JSONRPCError(.notPermitted, e.description)
        case .invalidAddress: return JSONRPCError(.invalidAddress, e.description)
        case .queueFull: return JSONRPCError(.storageFailed, e.description)
        case .noStateDirectory: return JSONRPCError(.storageFailed, e.description)
        }
    }
}

extension ControlDispatcher {
    /// `doctor.report`: the node's discovery and reachability facts, and optionally the
    /// dial-back probe through one connected peer the person verified (`DialBackWitness`).
    func doctorReport(_ p: DoctorReportParams, id: JSONRPCID?) -> Reply {
        let node = self.node
        let facts = node.doctorFacts()
        let info = self.info
        let online = node.sessions.count
        let result = { (dialBack: DoctorDialBack?) in
            DoctorReportResult(
                listen: info.listenAddresses, mdns: info.mdns, ownAdvertisementSeen: facts.ownAdvertisementSeen,
                advertisementsSeen: facts.advertisements, advertisementsUnreachable: facts.unreachable,
                peersOnline: online, staticPeers: facts.staticPeers, dialBack: dialBack)
        }
        guard p.dialBack ?? false else { return .typed(id: id, result: result(nil)) }
        return .later { answer in
            guard let (peer, name) = node.dialBackCandidate() else {
                answer(result(DoctorDialBack(peer: nil, outcome: .noPeer)))
                return
            }
            let asked = node.requestDialBack(
                from: peer, timeout: .milliseconds(Int64(ControlLimits.doctorDialBackTimeoutMs))
            ) { outcome in
                let o: DoctorDialBack.Outcome
                switch outcome {
                case .connected?: o = .connected
                case .failed?: o = .failed
                case .refused?: o = .refused
                case nil: o = .timeout
                }
                answer(result(DoctorDialBack(peer: name, fingerprint: peer.fingerprintText, outcome: o)))
            }
            if !asked { answer(result(DoctorDialBack(peer: nil, outcome: .noPeer))) }
        }
    }
}
