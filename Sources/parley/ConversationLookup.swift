import ParleyControlProtocol

/// Finding the room a `#ROOM` selector names in `rooms.list`, as the daemon resolves it,
/// for what a client shows beside the conversation (the chat's title and member count,
/// `parley read`'s attachments); every call still sends the selector for the daemon to resolve.
enum ConversationLookup {
    /// The room `#name` (or `#idprefix`) names, as the daemon would resolve it (for the
    /// title and the member count only).
    static func findRoom(_ selector: String, in rooms: [RoomInfo]) -> RoomInfo? {
        let query = String(selector.dropFirst())
        let current = rooms.filter { $0.member }
        if let exact = current.first(where: { $0.name == query }) ?? rooms.first(where: { $0.name == query }) {
            return exact
        }
        if let folded = current.first(where: { $0.name.lowercased() == query.lowercased() }) { return folded }
        let byID = rooms.filter { query.count >= 4 && $0.id.hasPrefix(query.lowercased()) }
        return byID.count == 1 ? byID[0] : nil
    }

}
