/// What `parley read` and `parley export` say about stored messages the daemon could not
/// read (`MessagesListResult.unreadable`: a damaged store row, left out of the page).
enum UnreadableMessages {
    /// At most this many cursors are listed; the daemon's log names every one.
    static let listed = 10

    static func notice(_ cursors: [Int], what: String) -> String {
        let shown = cursors.prefix(listed).map(String.init).joined(separator: ", ")
        let more = cursors.count > listed ? " and \(cursors.count - listed) more" : ""
        let count = cursors.count == 1 ? "1 stored message" : "\(cursors.count) stored messages"
        return "parley: \(count) could not be read (a damaged store; cursor \(shown)\(more)) and "
            + "\(cursors.count == 1 ? "is" : "are") not in \(what); parleyd's log says what is wrong with each"
    }
}
