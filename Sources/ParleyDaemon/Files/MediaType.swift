/// A media type from a file name's extension, for the offer (the receiver only shows it;
/// nothing is decoded on either side because of it).
enum MediaType {
    static let byExtension: [String: String] = [
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "svg": "image/svg+xml", "pdf": "application/pdf", "txt": "text/plain", "md": "text/markdown",
        "zip": "application/zip", "gz": "application/gzip", "tar": "application/x-tar", "mp4": "video/mp4",
        "mp3": "audio/mpeg", "ogg": "audio/ogg", "json": "application/json", "csv": "text/csv",
        "html": "text/html"
    ]

    static func guess(_ name: String) -> String {
        guard let dot = name.lastIndex(of: ".") else { return "" }
        return byExtension[name[name.index(after: dot)...].lowercased()] ?? ""
    }
}
