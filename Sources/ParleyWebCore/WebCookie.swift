/// The session cookie: its name, how it is set and how it is found in a `Cookie` header.
public enum WebCookie {
    public static let name = "parley_session"

    /// `Set-Cookie` value: HttpOnly (the page's scripts never see it, so an injected script
    /// could not send it anywhere), SameSite=Strict (no other site's page makes the browser
    /// send it), Path=/, and no Max-Age: it ends with the browser session. Not `Secure`:
    /// the server is plain HTTP on loopback.
    public static func setCookieValue(for session: WebSecret) -> String {
        "\(name)=\(session.text); HttpOnly; SameSite=Strict; Path=/"
    }

    /// The values of every `parley_session` cookie in a `Cookie` header (a browser may send
    /// several with the same name, e.g. from another port's `parley web`: cookies are not
    /// separated by port).
    public static func sessionValues(inCookieHeader header: Substring) -> [Substring] {
        header.split(separator: ";").compactMap { pair in
            let trimmed = pair.drop { $0 == " " || $0 == "\t" }
            guard let equals = trimmed.firstIndex(of: "=") else { return nil }
            guard trimmed[..<equals] == Substring(name) else { return nil }
            return trimmed[trimmed.index(after: equals)...]
        }
    }
}
