import ParleyControlProtocol

/// The attachment line of the chat view: who, the file's name and size, and its state.
enum ChatAttachment {
    static func line(_ t: FileTransferInfo) -> String {
        let who = Terminal.line(t.peerName)
        let what = "📎 \(Terminal.line(t.name)) (\(FileLines.size(t.size)))"
        let head = t.direction == "in" ? "\(who) sends \(what)" : "\(what) to \(who)"
        switch t.state {
        case "offered":
            return head + (t.direction == "in" ? ": offered — parley get \(t.id.prefix(8)) to accept" : ": offered")
        case "transferring": return head + ": transferring"
        case "completed": return head + ": completed" + (t.path.map { " → " + Terminal.line($0) } ?? "")
        case "failed": return head + ": failed (\(Terminal.line(t.error ?? "?")))"
        default: return head + ": \(t.state)"
        }
    }
}
