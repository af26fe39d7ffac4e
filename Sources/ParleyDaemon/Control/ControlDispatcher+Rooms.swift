import ParleyControlProtocol
import ParleyCore
import ParleyStore

/// The room methods, and `messages.send` / `messages.list` / `messages.subscribe` when their
/// `to` / `peer` starts with `#` (a room). Runs on the node's event loop.
extension ControlDispatcher {
    /// The prefix that makes a `to` / `peer` selector name a room.
    static let roomSelectorPrefix = "#"

    /// nil when the request is not about rooms (the caller handles it).
    func handleRooms(_ request: JSONRPCRequest, deliveryWaiter: (String, Int, JSONRPCID?) -> Void) -> Reply? {
        let id = request.id
        do {
            switch request.method {
            case ControlMethod.roomsList:
                _ = try request.decodeParams(RoomsListParams.self)
                let rooms: [RoomRecord]
                do { rooms = try node.store.rooms() } catch { throw NodeError.storage(error) }
                return .typed(id: id, result: RoomsListResult(rooms: rooms.map(node.roomInfo)))
            case ControlMethod.roomsCreate:
                let p = try request.decodeParams(RoomsCreateParams.self)
                let peers = try p.members.map { (q: String) throws(NodeError) in try node.resolvePeer(q) }
                let room = try node.createRoom(name: p.name, members: peers)
                return .typed(id: id, result: RoomResult(room: node.roomInfo(room)))
            case ControlMethod.roomsAdd:
                let p = try request.decodeParams(RoomsAddParams.self)
                let room = try node.resolveRoom(p.room)
                let peer = try node.resolvePeer(p.peer)
                if peer.trust == .changed || peer.replacedBy != nil { throw NodeError.keyChangePending(peer) }
                let updated = try node.changeMembership(of: room, .add, identity: peer.identity, name: peer.displayName)
                return .typed(id: id, result: RoomResult(room: node.roomInfo(updated)))
            case ControlMethod.roomsRemove:
                let p = try request.decodeParams(RoomsRemoveParams.self)
                let room = try node.resolveRoom(p.room)
                let (identity, name) = try memberToRemove(p.peer, room: room)
                let updated = try node.changeMembership(of: room, .remove, identity: identity, name: name)
                return .typed(id: id, result: RoomResult(room: node.roomInfo(updated)))
            case ControlMethod.roomsLeave:
                let p = try request.decodeParams(RoomsLeaveParams.self)
                let room = try node.resolveRoom(p.room)
                let updated = try node.changeMembership(of: room, .remove, identity: node.myIdentity, name: node.card.displayName)
                return .typed(id: id, result: RoomResult(room: node.roomInfo(updated)))
            case ControlMethod.messagesSend:
                let p = try request.decodeParams(MessagesSendParams.self)
                guard p.to.hasPrefix(Self.roomSelectorPrefix) else { return nil }
                let room = try node.resolveRoom(p.to)
                let stored = try node.sendToRoom(room, body: p.body)
                if p.effectiveWait {
                    deliveryWaiter(stored.id, p.effectiveTimeoutMs, id)
                    return .deferred
                }
                return .typed(id: id, result: MessagesSendResult(message: node.messageInfo(stored)))
            case ControlMethod.messagesList:
                let p = try request.decodeParams(MessagesListParams.self)
                guard let selector = p.peer, selector.hasPrefix(Self.roomSelectorPrefix) else { return nil }
                let room = try node.resolveRoom(selector)
                return .typed(id: id, result: try historyPage(p, scope: .room(room.id)))
            case ControlMethod.messagesMarkRead:
                let p = try request.decodeParams(MessagesMarkReadParams.self)
                guard p.peer.hasPrefix(Self.roomSelectorPrefix) else { return nil }
                let room = try node.resolveRoom(p.peer)
                let (marked, unread): (Int, Int)
                do {
                    marked = try node.store.markRoomRead(room: room.id, upTo: p.upTo.map { Int64($0) }, at: Node.nowMs()).count
                    unread = try node.store.roomUnreadCount(room: room.id)
                } catch { throw NodeError.storage(error) }
                return .typed(id: id, result: MessagesMarkReadResult(marked: marked, unread: unread))
            case ControlMethod.messagesSubscribe:
                let p = try request.decodeParams(MessagesSubscribeParams.self)
                guard let selector = p.peer, selector.hasPrefix(Self.roomSelectorPrefix) else { return nil }
                let room = try node.resolveRoom(selector)
                return .subscribe(filterIdentity: room.id, since: p.since)
            default:
                return nil
            }
        } catch let e as JSONRPCError {
            return .now(JSONRPCResponse(id: id, error: e))
        } catch let e as NodeError {
            return .now(JSONRPCResponse(id: id, error: Self.rpcError(e, node: node)))
        } catch let e as RoomError {
            return .now(JSONRPCResponse(id: id, error: Self.rpcError(e)))
        } catch {
            return .now(.init(id: id, error: .internalError("\(error)")))
        }
    }

    /// The member `rooms.remove` names: a peer, or this node itself (by its own name or
    /// fingerprint prefix), which is leaving.
    private func memberToRemove(_ selector: String, room: RoomRecord) throws -> (String, String) {
        if selector == node.card.displayName || node.fingerprint.matches(prefix: selector) || selector == node.myIdentity {
            return (node.myIdentity, node.card.displayName)
        }
        do {
            let peer = try node.resolvePeer(selector)
            return (peer.identity, peer.displayName)
        } catch {
            // A member this node never had a session with is not a known peer: match the
            // room's own member list by fingerprint prefix.
            let matches = room.members.filter { m in
                Sodium.fromHex(m).flatMap { try? IdentityPublicKey(bytes: $0) }.map { Fingerprint($0).matches(prefix: selector) } ?? false
            }
            if matches.count == 1 { return (matches[0], Node.fingerprint(ofHex: matches[0])) }
            throw error
        }
    }

    static func rpcError(_ e: RoomError) -> JSONRPCError {
        switch e {
        case .notFound(let q): return .roomNotFound(q)
        case let .ambiguous(q, rooms):
            return .roomAmbiguous(q, candidates: rooms.map { RoomCandidate(id: $0.id, name: $0.name) })
        case .notMember, .tooManyOperations: return JSONRPCError(.notPermitted, e.description)
        case .alreadyMember, .notAMember, .tooManyMembers, .invalid: return .invalidParams(e.description)
        case .queueFull: return JSONRPCError(.storageFailed, e.description)
        }
    }
}
