/// `parley web`'s two windows, told apart by their origin (scheme, host and port), which
/// the browser sets and no script can change:
/// - `page`, `http://127.0.0.1:PORT`: the chat. It shows text from remote peers, so it is
///   the part most exposed to injection, and it may call only what a person does while
///   chatting (`WebMethodPolicy.allowed`).
/// - `confirm`, `http://localhost:PORT`: the confirmation window, where a person gives a
///   key trust or reach: verifies, accepts or unblocks it (a click there), adds a contact
///   by address (`peers.connect`, the address typed there) or moves a contact to its new
///   key (`trust.replace`, only with the safety number typed from the other device). It shows no text from peers but names, as text; a script that got into the
///   page cannot read it, type into it or send its requests: another origin
///   (docs/WEB.md "Changing who you talk to").
public enum WebWindow: Sendable, Equatable, CaseIterable {
    case page
    case confirm

    /// The host (and so the origin) each window is served from.
    public func host(port: Int) -> String {
        switch self {
        case .page: return "127.0.0.1:\(port)"
        case .confirm: return "localhost:\(port)"
        }
    }

    public func origin(port: Int) -> String { "http://\(host(port: port))" }

    /// The window a `Host` header names, or nil for any other host (DNS rebinding).
    public static func named(byHost host: Substring?, port: Int) -> WebWindow? {
        guard let host else { return nil }
        return allCases.first { $0.host(port: port) == host.lowercased() }
    }

    /// The window an `Origin` header is, or nil for any other origin.
    public static func named(byOrigin origin: Substring?, port: Int) -> WebWindow? {
        guard let origin else { return nil }
        return allCases.first { $0.origin(port: port) == origin.lowercased() }
    }

    /// The files each window is made of: neither loads the other's script, so the
    /// confirmation window never runs the chat's code (nor shows what the chat shows).
    public var assetPaths: Set<String> {
        switch self {
        case .page:
            return Set(WebAssets.byPath.keys).subtracting(["/confirm.html", "/confirm.js", "/qrcode.js"])
        case .confirm:
            return [
                "/confirm.html", "/confirm.js", "/qrcode.js", "/auth.js", "/rpc.js", "/dom.js", "/style.css",
                "/icon.svg", "/favicon.ico"
            ]
        }
    }

    /// Its top-level page: what `/` is in this window.
    public var pagePath: String {
        switch self {
        case .page: return "/index.html"
        case .confirm: return "/confirm.html"
        }
    }
}
