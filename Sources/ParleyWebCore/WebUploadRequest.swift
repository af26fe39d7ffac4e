import Foundation

/// One `POST /upload?to=…&name=…&caption=…` from the page, parsed, and the decision whether
/// to take its body at all (pure: the sizes and the free space are given). The page never
/// names a path: the server stages the body and calls `files.send` with the staged path
/// itself, so a script in the page can send what it uploads and nothing else of the
/// person's files (`files.send` is not on the WebSocket's allow-list).
public struct WebUploadRequest: Sendable, Equatable {
    /// A peer or `#room` selector, checked by the daemon.
    public var to: String
    /// Sanitized (`WebUploadName`).
    public var name: String
    public var caption: String?
    /// The body's declared size.
    public var size: Int64

    public static func parse(query: Substring?, contentLength: Int64?) -> Result<WebUploadRequest, WebUploadError> {
        guard let contentLength else { return .failure(.lengthRequired) }
        guard contentLength >= 0 else { return .failure(.badRequest("a negative Content-Length")) }
        guard contentLength <= Int64(WebLimits.maxUploadBytes) else { return .failure(.tooLarge(size: contentLength)) }
        guard let query, query.utf8.count <= WebLimits.maxUploadQueryBytes else {
            return .failure(.badRequest("the recipient and the file name are missing or too long"))
        }
        var values: [Substring: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, ["to", "name", "caption"].contains(parts[0]) else {
                return .failure(.badRequest("unknown parameter"))
            }
            guard values[parts[0]] == nil else { return .failure(.badRequest("\(parts[0]) given twice")) }
            // `+` is a space in a form's query; the page sends %20, but take both.
            let plus = parts[1].replacingOccurrences(of: "+", with: " ")
            guard let decoded = plus.removingPercentEncoding, !decoded.utf8.contains(0) else {
                return .failure(.badRequest("\(parts[0]) is not valid percent-encoded UTF-8"))
            }
            values[parts[0]] = decoded
        }
        guard let to = values["to"], !to.isEmpty, to.utf8.count <= 256 else {
            return .failure(.badRequest("no recipient"))
        }
        guard let name = values["name"] else { return .failure(.badRequest("no file name")) }
        let caption = values["caption"].flatMap { $0.isEmpty ? nil : $0 }
        if let caption, caption.utf8.count > WebLimits.maxUploadCaptionBytes {
            return .failure(.badRequest("the caption is longer than \(WebLimits.maxUploadCaptionBytes) bytes"))
        }
        return .success(
            WebUploadRequest(to: to, name: WebUploadName.sanitize(name), caption: caption, size: contentLength))
    }
}

/// Whether an upload of `size` bytes may start, given what is running and staged and the
/// free space on the staging file system. Checked before a byte of the body is read.
public enum WebUploadAdmission {
    public static func check(
        size: Int64, activeUploads: Int, stagedBytes: Int64, freeBytes: Int64
    ) -> WebUploadError? {
        if size > Int64(WebLimits.maxUploadBytes) { return .tooLarge(size: size) }
        if activeUploads >= WebLimits.maxConcurrentUploads { return .tooManyUploads }
        if stagedBytes + size > WebLimits.maxStagingBytes { return .stagingFull(staged: stagedBytes) }
        if freeBytes - size < WebLimits.minFreeBytesAfterUpload { return .diskFull(free: freeBytes) }
        return nil
    }
}
