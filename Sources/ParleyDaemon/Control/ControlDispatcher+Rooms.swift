import ParleyControlProtocol
import ParleyCore
import ParleyStore

/// The room methods, and `messages.list` / `messages.mark_read` aimed at a `#room`
/// (`messages.send` and `messages.subscribe` to a room are one line each in
/// `ControlDispatcher.perform`). Runs on the node's event loop.
extension ControlDispatcher {
    func listRooms(id: JSONRPCID?) throws -> Reply {
        let rooms: [RoomRecord]
        do { rooms = try node.store.rooms() } catch { throw ControlFailure.storeRead(what: "the rooms", error) }
        return .typed(id: id, result: RoomsListResult(rooms: rooms.map(node.roomInfo)))
    }

    func createRoom(_ p: RoomsCreateParams, id: JSONRPCID?) throws -> Reply {
        let peers = try p.members.map { (q: String) throws(NodeError) in try node.resolvePeer(q) }
        let room = try node.createRoom(
            name: p.name, members: peers,
            policy: .init(onlyAdminsAdd: p.onlyAdminsAdd ?? false, sharedHistory: p.sharedHistory ?? false))
        return .typed(id: id, result: RoomResult(room: node.roomInfo(room)))
    }

    func addToRoom(_ p: RoomsAddParams, id: JSONRPCID?) throws -> Reply {
        let room = try node.resolveRoom(p.room)
        let peer = try node.resolvePeer(p.peer)
        if let refusal = node.sendRefusal(peer) { throw refusal }
        try requireJoined(room)
        let target = peer.identity
        let state = try node.roomState(room)
        if state?.isMember(target) == true { throw RoomError.alreadyMember(room: room.name, peer: peer.displayName) }
        let updated = try node.changeRoom(room, .add(target))
        return .typed(id: id, result: RoomResult(room: node.roomInfo(updated)))
    }

    func removeFromRoom(_ p: RoomsRemoveParams, id: JSONRPCID?) throws -> Reply {
        let room = try node.resolveRoom(p.room)
        let (identity, name) = try memberToRemove(p.peer, room: room)
        if identity != node.myIdentityKey { try requireJoined(room) }
        guard room.members.contains(identity) else { throw RoomError.notAMember(room: room.name, peer: name) }
        let updated = try node.changeRoom(room, .remove(identity))
        return .typed(id: id, result: RoomResult(room: node.roomInfo(updated)))
    }

    func leaveRoom(_ p: RoomsLeaveParams, id: JSONRPCID?) throws -> Reply {
        let room = try node.resolveRoom(p.room)
        let updated = try node.changeRoom(room, .remove(node.myIdentityKey))
        return .typed(id: id, result: RoomResult(room: node.roomInfo(updated)))
    }

    /// Acting on others needs a joined member: say so before anything else.
    private func requireJoined(_ room: RoomRecord) throws {
        switch room.status {
        case .joined: return
        case .invited: throw RoomError.notJoined(room)
        case .left, .retired: throw RoomError.notMember(room)
        }
    }

    func setRole(_ p: RoomsSetRoleParams, id: JSONRPCID?) throws -> Reply {
        let room = try node.resolveRoom(p.room)
        try requireJoined(room)
        let (identity, name) = try memberToRemove(p.peer, room: room)
        guard room.members.contains(identity) else { throw RoomError.notAMember(room: room.name, peer: name) }
        guard let role = RoomRole(name: p.role) else { throw JSONRPCError.invalidParams("unknown role \(p.role)") }
        let updated = try node.changeRoom(room, .setRole(identity, role))
        return .typed(id: id, result: RoomResult(room: node.roomInfo(updated)))
    }

    /// The settings given change, the others stay as they are.
    func setRoomPolicy(_ p: RoomsSetPolicyParams, id: JSONRPCID?) throws -> Reply {
        let room = try node.resolveRoom(p.room)
        var policy = node.roomPolicy(room)
        if let v = p.onlyAdminsAdd { policy.onlyAdminsAdd = v }
        if let v = p.sharedHistory { policy.sharedHistory = v }
        return .typed(id: id, result: RoomResult(room: node.roomInfo(try node.changeRoom(room, .setPolicy(policy)))))
    }

    func changeRoom(_ selector: String, _ change: RoomOperation.Change, id: JSONRPCID?) throws -> Reply {
        let room = try node.resolveRoom(selector)
        return .typed(id: id, result: RoomResult(room: node.roomInfo(try node.changeRoom(room, change))))
    }

    func listRoomMessages(_ selector: String, _ p: MessagesListParams, id: JSONRPCID?) throws -> Reply {
        let room = try node.resolveRoom(selector)
        return .typed(id: id, result: try historyPage(p, scope: .room(room.id)))
    }

    func markRoomRead(_ p: MessagesMarkReadParams, id: JSONRPCID?) throws -> Reply {
        let room = try node.resolveRoom(p.peer)
        let (marked, unread): (Int, Int)
        do {
            marked = try node.store.markRoomRead(
                room: room.id, upTo: p.upTo.map { Int64($0) }, at: Node.nowMs()
            ).count
            unread = max(0, try node.store.roomUnreadCount(room: room.id) - node.afterRemovalMarks.unread(in: room.id))
        } catch { throw ControlFailure.markRead(room: p.peer, error) }
        return .typed(id: id, result: MessagesMarkReadResult(marked: marked, unread: unread))
    }

    /// The member `rooms.remove` names: a peer, or this node itself (by its own name or
    /// fingerprint prefix), which is leaving.
    private func memberToRemove(_ selector: String, room: RoomRecord) throws -> (IdentityPublicKey, String) {
        if selector == node.ownIdentity.card.displayName || node.fingerprint.matches(prefix: selector)
            || selector == node.myIdentity
        {
            return (node.myIdentityKey, node.ownIdentity.card.displayName)
        }
        do {
            let peer = try node.resolvePeer(selector)
            return (peer.identity, peer.displayName)
        } catch {
            // A member this node never had a session with is not a known peer: match the
            // room's own member list by fingerprint prefix.
            let matches = room.members.filter { Fingerprint($0).matches(prefix: selector) }
            if matches.count == 1 { return (matches[0], Node.fingerprint(of: matches[0])) }
            throw error
        }
    }

    static func rpcError(_ e: RoomError) -> JSONRPCError {
        switch e {
        case .notFound(let q): return .roomNotFound(q)
        case let .ambiguous(q, rooms):
            return .roomAmbiguous(q, candidates: rooms.map { RoomCandidate(id: $0.id.hex, name: $0.name) })
        case .notMember, .tooManyOperations, .refused, .notJoined: return JSONRPCError(.notPermitted, e.description)
        case .notInvited: return .invalidParams(e.description)
        case .alreadyMember, .notAMember, .tooManyMembers, .invalid: return .invalidParams(e.description)
        case .queueFull: return JSONRPCError(.storageFailed, e.description)
        }
    }
}
