/// Why an upload from the page was refused or failed: the HTTP status and the sentence
/// the page shows. Nothing is left on disk in any of these cases.
public enum WebUploadError: Error, Sendable, Equatable {
    /// The body is larger than `WebLimits.maxUploadBytes` (declared or as it arrives).
    case tooLarge(size: Int64)
    /// No `Content-Length`: the size must be known up front to check the limits.
    case lengthRequired
    /// The body ended before its declared length (the page was closed, the upload cut).
    case incomplete(received: Int64, expected: Int64)
    case tooManyUploads
    /// The staging directory would hold more than `WebLimits.maxStagingBytes`.
    case stagingFull(staged: Int64)
    /// Too little free space would remain.
    case diskFull(free: Int64)
    /// A missing or malformed parameter (`to`, `name`, `caption`).
    case badRequest(String)
    /// The staging directory or file could not be written.
    case stagingFailed(String)
    /// `files.send` was refused by the daemon: its error code and message.
    case sendRefused(code: Int, message: String)
    /// The daemon could not be reached or did not answer.
    case daemonUnavailable(String)

    public var status: Int {
        switch self {
        case .tooLarge: return 413
        case .lengthRequired: return 411
        case .incomplete, .badRequest: return 400
        case .tooManyUploads: return 429
        case .stagingFull, .diskFull, .stagingFailed: return 507
        case .sendRefused: return 422
        case .daemonUnavailable: return 502
        }
    }

    public var message: String {
        switch self {
        case .tooLarge(let size):
            return
                "The file is too large to send from the browser (\(WebByteCount.text(size)); at most \(WebByteCount.text(Int64(WebLimits.maxUploadBytes)))). Send it with `parley send PEER --attach FILE` instead."
        case .lengthRequired:
            return "The upload did not say its size; reload the page and try again."
        case .incomplete(let received, let expected):
            return
                "The upload was cut off (\(WebByteCount.text(received)) of \(WebByteCount.text(expected))); nothing was sent. Try again."
        case .tooManyUploads:
            return "\(WebLimits.maxConcurrentUploads) uploads are already running; wait for one to finish."
        case .stagingFull(let staged):
            return
                "Files waiting to be sent from the browser already take \(WebByteCount.text(staged)) (at most \(WebByteCount.text(WebLimits.maxStagingBytes))); wait until some transfers end, or cancel them."
        case .diskFull(let free):
            return
                "Not enough free disk space to stage the file (\(WebByteCount.text(free)) free; \(WebByteCount.text(WebLimits.minFreeBytesAfterUpload)) must stay free). Free some space and try again."
        case .badRequest(let why):
            return "Bad upload: \(why)."
        case .stagingFailed(let why):
            return "Could not stage the file for sending: \(why)."
        case .sendRefused(_, let message):
            return message
        case .daemonUnavailable(let why):
            return "Could not reach parleyd to send the file (\(why)); is it running?"
        }
    }
}

/// Sizes for people: "1.5 MiB".
public enum WebByteCount {
    public static func text(_ bytes: Int64) -> String {
        let units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(bytes) bytes" }
        let rounded = (value * 10).rounded() / 10
        let text = rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
        return "\(text) \(units[unit])"
    }
}
