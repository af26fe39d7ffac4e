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
        let room = try node.createRoom(name: p.name, members: peers)
        return .typed(id: id, result: RoomResult(room: node.roomInfo(room)))
    }

    func addToRoom(_ p: RoomsAddParams, id: JSONRPCID?) throws -> Reply {
        let room = try node.resolveRoom(p.room)
        let peer = try node.resolvePeer(p.peer)
        if let refusal = node.sendRefusal(peer) { throw refusal }
        let updated = try node.changeMembership(of: room, .add, identity: peer.identity, name: peer.displayName)
        return .typed(id: id, result: RoomResult(room: node.roomInfo(updated)))
    }

    func removeFromRoom(_ p: RoomsRemoveParams, id: JSONRPCID?) throws -> Reply {
        let room = try node.resolveRoom(p.room)
        let (identity, name) = try memberToRemove(p.peer, room: room)
        let updated = try node.changeMembership(of: room, .remove, identity: identity, name: name)
        return .typed(id: id, result: RoomResult(room: node.roomInfo(updated)))
    }

    func leaveRoom(_ p: RoomsLeaveParams, id: JSONRPCID?) throws -> Reply {
        let room = try node.resolveRoom(p.room)
        let updated = try node.changeMembership(
            of: room, .remove, identity: node.myIdentity, name: node.card.displayName)
        return .typed(id: id, result: RoomResult(room: node.roomInfo(updated)))
    }

    func listRoomMessages(_ selector: String, _ p: MessagesListParams, id: JSONRPCID?) throws -> Reply {
        let room = try node.resolveRoom(selector)
        return .typed(id: id, result: try historyPage(p, scope: .room(room.id)))
    }

    func markRoomRead(_ p: MessagesMarkReadParams, id: JSONRPCID?) throws -> Reply {
        let room = try node.resolveRoom(p.peer)
        let (marked, unread): (Int, Int)
        do {
            marked = try node.store.markRoomRead(room: room.id, upTo: p.upTo.map { Int64($0) }, at: Node.nowMs()).count
            unread = try node.store.roomUnreadCount(room: room.id)
        } catch { throw ControlFailure.markRead(room: p.peer, error) }
        return .typed(id: id, result: MessagesMarkReadResult(marked: marked, unread: unread))
    }

    /// The member `rooms.remove` names: a peer, or this node itself (by its own name or
    /// fingerprint prefix), which is leaving.
    private func memberToRemove(_ selector: String, room: RoomRecord) throws -> (String, String) {
        if selector == node.card.displayName || node.fingerprint.matches(prefix: selector)
            || selector == node.myIdentity
        {
            return (node.myIdentity, node.card.displayName)
        }
        do {
            let peer = try node.resolvePeer(selector)
            return (peer.identity, peer.displayName)
        } catch {
            // A member this node never had a session with is not a known peer: match the
            // room's own member list by fingerprint prefix.
            let matches = room.members.filter { m in
                Sodium.fromHex(m).flatMap { try? IdentityPublicKey(bytes: $0) }.map {
                    Fingerprint($0).matches(prefix: selector)
                } ?? false
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
