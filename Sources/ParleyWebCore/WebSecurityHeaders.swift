/// Headers on every response. The page shows text written by remote peers; if a bug ever let
/// some of it be read as HTML, these keep it from running or leaving:
/// - the CSP allows scripts and styles only from files this server serves (no inline
///   script or style, no `eval`), network connections only back to this server, images
///   only from here, `data:` (thumbnails) or `blob:` (a received picture, made by the
///   page's own script from bytes it checked: files.js `pictureURL`); `frame-ancestors 'none'` stops
///   clickjacking; `form-action` and `base-uri` close the remaining HTML-injection routes;
/// - `nosniff` so nothing is read as a type it was not served as; `no-referrer` so the
///   page's address is never sent anywhere (a Referer never carries the fragment, where
///   the sign-in secret is, anyway); `no-store` so no cache keeps a page or a message.
public enum WebSecurityHeaders {
    public static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        + "img-src 'self' data: blob:; manifest-src 'self'; base-uri 'none'; form-action 'none'; "
        + "frame-ancestors 'none'"

    public static let all: [(name: String, value: String)] = [
        ("Content-Security-Policy", contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
        ("Cache-Control", "no-store"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
        ("Permissions-Policy", "camera=(), microphone=(), geolocation=(), usb=(), serial=()")
    ]
}
