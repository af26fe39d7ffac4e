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
        /// The answer comes later (`messages.send` and `peers.connect` with `wait`,
        /// `doctor.report` with a dial-back; ControlDispatcher+Waits.swift): the connection
        /// calls `start`, on the event loop, with the function that answers (once), and
        /// calls what `start` returns if the client goes away first (timers, observers).
        case later(start: (_ answer: @escaping (Answer) -> Void) -> Cancel)
        /// The connection becomes a subscriber (resuming after `since`); it answers itself.
        case subscribe(filterIdentity: String?, since: Int?)
    }

    /// A later answer: a success encoded from its typed result (with the request's id), or
    /// a whole response (an error).
    enum Answer {
        case result(any Encodable & Sendable)
        case response(JSONRPCResponse)
    }

    /// Stops a later answer's wait; nothing is answered after it.
    typealias Cancel = () -> Void

    /// Handles a request whose params `ControlCall.decode` has already decoded.
    func handle(_ call: ControlCall, id: JSONRPCID?) -> Reply {
        do {
            return try perform(call, id: id)
        } catch {
            return .now(JSONRPCResponse(id: id, error: Self.rpcError(error, node: node)))
        }
    }

    private func perform(_ call: ControlCall, id: JSONRPCID?) throws -> Reply {
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
            // The same path as a pipelined run (`storeSends`), so both route `#room` alike.
            let (stored, target) = try storeSends([(p.to, p.body)])[0].get()
            // Nothing to wait for: delivered when stored, or written before anyone else has
            // joined the room (it waits for the invited, who get it when they join: no
            // acknowledgement can come before that).
            if p.effectiveWait, stored.state != .delivered, !nobodyElseJoined(target) {
                return awaitDelivery(of: stored.id, timeoutMs: p.effectiveTimeoutMs, id: id)
            }
            return .typed(id: id, result: sendResult(stored, to: target))
        case .messagesList(let p):
            if let selector = p.peer, Self.namesRoom(selector) { return try listRoomMessages(selector, p, id: id) }
            let peer = try p.peer.map { (q: String) throws(NodeError) in try node.resolvePeerIncludingReplaced(q) }
            return .typed(id: id, result: try historyPage(p, scope: peer.map { .peer($0.identity) } ?? .everything))
        case .messagesSearch(let p):
            return .typed(id: id, result: try search(p))
        case .messagesSubscribe(let p):
            if let selector = p.peer, Self.namesRoom(selector) {
                return .subscribe(filterIdentity: try node.resolveRoom(selector).id.hex, since: p.since)
            }
            let peer = try p.peer.map { (q: String) throws(NodeError) in try node.resolvePeer(q) }
            return .subscribe(filterIdentity: peer?.identity.hex, since: p.since)
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
                    fingerprint: Node.fingerprint(of: peer.identity),
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
        // Each unreadable row was logged once by the store's `unreadableRows` (Node's report).
        return MessagesListResult(
            messages: node.messageInfos(page.messages), hasOlder: page.hasOlder, hasNewer: page.hasNewer,
            pagedForward: p.pagesForward, requestedAfter: p.after, requestedBefore: p.before,
            unreadable: page.unreadable.map { Int($0.rowID) })
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
        let found: SearchResults
        do { found = try node.store.search(p.query, scope: scope, limit: p.effectiveLimit) } catch {
            throw ControlFailure.storeRead(what: "the search index", error)
        }
        let took = ContinuousClock.now - started
        let hits = found.hits
        return MessagesSearchResult(
            hits: zip(node.messageInfos(hits.map(\.message)), hits).map {
                MessagesSearchHit(message: $0, snippet: $1.snippet)
            },
            tookMs: Int(took.components.seconds * 1000 + took.components.attoseconds / 1_000_000_000_000_000),
            unreadable: found.unreadable.map { Int($0.rowID) })
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

    /// Answers a run of pipelined sends, in request order (`storeSends`).
    func sendBatch(_ sends: [(id: JSONRPCID?, params: MessagesSendParams)]) -> [BatchAnswer] {
        zip(sends, storeSends(sends.map { ($0.params.to, $0.params.body) })).map { send, result in
            switch result {
            case .success(let (m, target)):
                return .sent(JSONRPCTypedSuccess(id: send.id, result: sendResult(m, to: target)))
            case .failure(let e):
                return .failed(JSONRPCResponse(id: send.id, error: Self.rpcError(e, node: node)))
            }
        }
    }

    /// Where a `messages.send` goes once its `to` is resolved.
    enum SendTarget {
        case peer(PeerRecord)
        /// `#name`: every other member of the room.
        case room(RoomRecord)
    }

    /// The one place `messages.send`'s `to` is routed, for a single request and for a
    /// pipelined run alike: `#name` is a room (resolving it as a peer name would fail it),
    /// anything else a peer. Stores in request order: consecutive direct sends in one
    /// transaction (`Node.sendMany`), consecutive room sends likewise
    /// (`Node.sendManyToRoom`); one that cannot be resolved fails alone.
    func storeSends(_ sends: [(to: String, body: String)]) -> [Result<(StoredMessage, SendTarget), Error>] {
        var results = [Result<(StoredMessage, SendTarget), Error>?](repeating: nil, count: sends.count)
        // Direct sends waiting to be stored together: their index and item.
        var direct: [(index: Int, peer: PeerRecord, body: String)] = []
        func storeDirect() {
            guard !direct.isEmpty else { return }
            for (k, result) in node.sendMany(direct.map { ($0.peer, $0.body) }).enumerated() {
                let peer = direct[k].peer
                results[direct[k].index] = result.map { ($0, .peer(peer)) }.mapError { $0 as Error }
            }
            direct.removeAll()
        }
        // Room sends likewise.
        var room: [(index: Int, room: RoomRecord, body: String)] = []
        func storeRoom() {
            guard !room.isEmpty else { return }
            for (k, result) in node.sendManyToRoom(room.map { ($0.room, $0.body, nil) }).enumerated() {
                let target = room[k].room
                results[room[k].index] = result.map { ($0, .room(target)) }
            }
            room.removeAll()
        }
        for (i, send) in sends.enumerated() {
            if Self.namesRoom(send.to) {
                storeDirect()
                do { room.append((i, try node.resolveRoom(send.to), send.body)) } catch { results[i] = .failure(error) }
                continue
            }
            storeRoom()
            do { direct.append((i, try node.resolvePeer(send.to), send.body)) } catch { results[i] = .failure(error) }
        }
        storeDirect()
        storeRoom()
        // Every index was filled above: by a resolve failure or by its run's store.
        return results.map { $0 ?? .failure(NoSendResult()) }
    }

    /// What `storeSends` answers for a send it did not store (never: each is either
    /// resolved and stored with its run or failed by its resolve), rather than crash.
    private struct NoSendResult: Error, CustomStringConvertible {
        var description: String { "the message was not stored (no result); send it again" }
    }

    /// `messages.send`'s answer for a stored message: whether the peer is online, or how
    /// many of the room's other members there are and how many are online.
    /// A room message nobody but this node has joined for yet: `--wait` answers at once.
    func nobodyElseJoined(_ target: SendTarget) -> Bool {
        guard case .room(let room) = target else { return false }
        return node.roomRecipientsOnline(room).all == 0
    }

    func sendResult(_ m: StoredMessage, to target: SendTarget) -> MessagesSendResult {
        switch target {
        case .peer(let peer):
            return MessagesSendResult(
                message: node.messageInfo(m, justStored: true), peerOnline: node.isOnline(peer.identity))
        case .room(let room):
            let recipients = node.roomRecipientsOnline(room)
            return MessagesSendResult(
                message: node.messageInfo(m, justStored: true), peerOnline: nil,
                roomRecipients: recipients.all, roomRecipientsOnline: recipients.online)
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
                        name: $0.label, fingerprint: Node.fingerprint(of: $0.identity),
                        trust: ControlViews.trust($0.trust))
                })
        case .peerBlocked, .peerAwaitingApproval, .peerReplaced: return JSONRPCError(.peerNotTrusted, e.description)
        case .bodyTooLarge(let n): return .bodyTooLarge(bytes: n, maxBytes: WireLimits.maxBodyBytes)
        case .emptyBody: return .invalidParams(e.description)
        case .storage, .outboxUncounted: return JSONRPCError(.storageFailed, e.description)
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
        let online = node.sessionDriver.table.count
        let result = { (dialBack: DoctorDialBack?) in
            DoctorReportResult(
                listen: info.listenAddresses, mdns: info.mdns, ownAdvertisementSeen: facts.ownAdvertisementSeen,
                advertisementsSeen: facts.advertisements, advertisementsUnreachable: facts.unreachable,
                peersOnline: online, staticPeers: facts.staticPeers, dialBack: dialBack)
        }
        guard p.dialBack ?? false else { return .typed(id: id, result: result(nil)) }
        return .later { answer in
            guard let (peer, name) = node.dialBackCandidate() else {
                answer(.result(result(DoctorDialBack(peer: nil, outcome: .noPeer))))
                return {}
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
                answer(.result(result(DoctorDialBack(peer: name, fingerprint: peer.fingerprintText, outcome: o))))
            }
            if !asked { answer(.result(result(DoctorDialBack(peer: nil, outcome: .noPeer)))) }
            // The probe ends on its own timeout; an answer after the client left is dropped.
            return {}
        }
    }
}
