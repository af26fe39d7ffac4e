import ArgumentParser
import Foundation
import ParleyControlProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// `parley files`: transfers in both directions, and answering them.
struct FilesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "files",
        abstract: "List file transfers (incoming and outgoing), or accept, reject or cancel one.",
        discussion: """
            Incoming files from a verified peer up to file_auto_accept_mib (64 MiB) arrive by themselves; \
            others wait for `parley files accept ID` (or `parley get ID`). IDs: any unique start of 4 or \
            more hex digits, as listed.
            """,
        subcommands: [
            FilesList.self, FilesSend.self, FilesAccept.self, FilesReject.self, FilesCancel.self, FilesOpenDir.self,
            FilesHash.self, FilesThumbnail.self
        ],
        defaultSubcommand: FilesList.self)
}

struct FilesList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List transfers, newest first.")
    @OptionGroup var options: ConnectionOptions
    @Option(name: .long, help: "At most this many (default 50).") var limit: Int?
    func validate() throws { try validateForCommandLine(FilesListParams(limit: limit)) }
    func run() throws {
        try Session.run(options) { client in
            let r = try client.call(FilesListParams(limit: limit))
            if options.json { return Console.json(r) }
            if r.transfers.isEmpty { return Console.out("no file transfers (received files go to \(r.directory))") }
            for t in r.transfers { Console.out(FileLines.summary(t)) }
        }
    }
}

/// `parley files send PEER|#ROOM FILE...`: the files alone (`parley send --attach` with
/// no text), opened here as you and passed by descriptor, all or none.
struct FilesSend: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Offer files to a peer or a room (opened by this command with your rights; all or none).")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "The peer, or #ROOM.") var to: String
    @Argument(help: "The files (at most 16).") var files: [String]
    @Option(name: .long, help: "A caption for every file.") var caption: String?
    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("give at least one file") }
        guard files.count <= DescriptorRights.maxDescriptorsPerMessage else {
            throw ValidationError("at most \(DescriptorRights.maxDescriptorsPerMessage) files at once")
        }
    }
    func run() throws {
        let opened: OpenedFiles
        do { opened = try OpenedFiles.open(files) } catch {
            Console.err("parley: \(error)")
            throw ExitCode(CLIExitCode.usage)
        }
        try Session.run(options, peer: to, callTimeout: .seconds(600)) { client in
            let r = try opened.send(client, to: to, caption: caption)
            if options.json { return Console.json(r) }
            for t in r.transfers { Console.out("→ offered " + FileLines.summary(t)) }
        }
    }
}

/// accept, reject and cancel: one transfer id in; out, the transfer as it is now.
private func runTransferAction<P: ControlCallParams>(_ params: P, _ options: ConnectionOptions) throws
where P.ResultType == FileTransferResult {
    try Session.run(options) { client in
        let r = try client.call(params)
        if options.json { return Console.json(r) }
        Console.out(FileLines.summary(r.transfer))
    }
}

/// `parley files thumbnail ID --to FILE`: the offer's thumbnail (a peer's bytes, or ours)
/// written out as it is, for a viewer; the daemon says whether it is a JPEG or a PNG.
struct FilesThumbnail: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumbnail",
        abstract: "Write a transfer's thumbnail (JPEG or PNG) to a new file (mode 0600, never overwriting).")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "The transfer id (a unique start of 4 or more hex digits).") var id: String
    @Option(name: .long, help: "The file to create; it must not exist.") var to: String
    func validate() throws { try validateForCommandLine(FilesThumbnailParams(id: id)) }
    func run() throws {
        try Session.run(options) { client in
            let r = try client.call(FilesThumbnailParams(id: id))
            guard let data = Data(base64Encoded: r.data) else {
                Console.err("parley: the daemon sent a thumbnail that is not base64")
                throw ExitCode(CLIExitCode.daemonError)
            }
            try ThumbnailFile.write(data, to: to)
            if options.json { return Console.json(r) }
            Console.out("\(r.mediaType), \(FileLines.size(data.count)) written to \(Terminal.line(to))")
        }
    }
}

/// Creates the thumbnail's file: exclusive (an existing file or link is never replaced or
/// followed), 0600 (it is a picture of a private file).
enum ThumbnailFile {
    static func write(_ data: Data, to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            Console.err("parley: cannot create \(path): \(String(cString: strerror(errno))) (it must not exist yet)")
            throw ExitCode(CLIExitCode.usage)
        }
        defer { close(fd) }
        let ok = data.withUnsafeBytes { raw -> Bool in
            var off = 0
            while off < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + off, raw.count - off)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                off += n
            }
            return true
        }
        guard ok else {
            Console.err("parley: cannot write \(path): \(String(cString: strerror(errno)))")
            throw ExitCode(CLIExitCode.daemonError)
        }
    }
}

struct FilesAccept: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "accept",
        abstract: "Accept an offered file (parleyd keeps it; `parley get ID --to DIR` writes it out as you).")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "The transfer id (or its first 4+ digits).") var id: String
    func validate() throws { try validateForCommandLine(FilesAcceptParams(id: id)) }
    func run() throws { try runTransferAction(FilesAcceptParams(id: id), options) }
}

struct FilesReject: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "reject", abstract: "Decline an offered file.")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "The transfer id (or its first 4+ digits).") var id: String
    func validate() throws { try validateForCommandLine(FilesRejectParams(id: id)) }
    func run() throws { try runTransferAction(FilesRejectParams(id: id), options) }
}

struct FilesCancel: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel", abstract: "Stop a transfer in either direction (the other side is told).")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "The transfer id (or its first 4+ digits).") var id: String
    func validate() throws { try validateForCommandLine(FilesCancelParams(id: id)) }
    func run() throws { try runTransferAction(FilesCancelParams(id: id), options) }
}

struct FilesOpenDir: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open-dir",
        abstract: "Print where parleyd keeps received files (open it with xdg-open when asked).",
        discussion: """
            Under the shipped units that directory is parleyd's own (you cannot open it): \
            `parley get ID --to DIR` writes a received file out, as you.
            """)
    @OptionGroup var options: ConnectionOptions
    @Flag(name: .long, help: "Open it in the desktop's file manager (xdg-open).") var open = false
    func run() throws {
        try Session.run(options) { client in
            let r = try client.call(FilesListParams(limit: 1))
            if options.json { return Console.json(["directory": r.directory]) }
            Console.out(r.directory)
            if open {
                let p = Process()
                p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                p.arguments = ["xdg-open", r.directory]
                try? p.run()
            }
        }
    }
}

/// `parley get ID [--to DIR|FILE]`: accept an offered file if needed, wait for it, and
/// write it out as you (`files.open` hands over the daemon's copy as a descriptor).
struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Receive an offered file: accept it, wait until it is complete, write it where you say.",
        discussion: """
            Shows a progress bar with rate and time left on a terminal (not with --json or when piped). \
            The file is written by this command, with your permissions (owner you, mode from your umask), \
            into DIR under its own name, or as FILE; never replacing a file: in a directory `report.pdf` \
            becomes `report (1).pdf`, an existing FILE is an error. Without --to: the current directory.
            """)
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "The transfer id (or its first 4+ digits).") var id: String
    @Option(
        name: .long,
        help: ArgumentHelp("Write the file into this directory, or as this new file.", valueName: "dir|file"))
    var to: String?
    func validate() throws { try validateForCommandLine(FilesAcceptParams(id: id)) }
    func run() throws {
        var final: FileTransferInfo?
        let target = to ?? FileManager.default.currentDirectoryPath
        try Session.run(options) { client in
            var t = try FileWait.one(client, id: id)
            if t.direction == "in" && t.state == "offered" { t = try client.call(FilesAcceptParams(id: id)).transfer }
            var done = try FileWait.untilFinal(client, [t], progress: !options.json && isatty(1) == 1)[0]
            if done.direction == "in" && done.state == "completed" {
                let (opened, fds) = try client.call(FilesOpenParams(id: done.id), passing: [], timeout: .seconds(30))
                defer { DescriptorMessage.closeAll(fds) }
                guard let fd = fds.first, fds.count == 1 else {
                    throw ControlClientError.protocolViolation("files.open answered without exactly one descriptor")
                }
                do {
                    let name = FileMove.targetName(
                        offered: opened.transfer.name, saved: opened.transfer.path ?? opened.transfer.name)
                    done.path = try ReceivedFileWriter.write(from: fd, size: opened.size, name: name, to: target)
                } catch {
                    Console.err("parley: \(error)")
                    throw ExitCode(CLIExitCode.daemonError)
                }
            }
            final = done
        }
        guard let t = final else { return }
        if options.json { return Console.json(t) }
        Console.out(FileLines.summary(t))
        if t.state != "completed" { throw ExitCode(CLIExitCode.daemonError) }
    }
}

/// Waiting for transfers by asking the daemon twice a second (the progress bar's pace).
enum FileWait {
    static func one(_ client: ControlClient, id: String) throws -> FileTransferInfo {
        let found = try client.call(FilesListParams(limit: 2, id: id)).transfers
        guard let first = found.first, found.count == 1 || first.id == id else {
            throw ControlClientError.remote(
                JSONRPCError(
                    .transferNotFound,
                    found.isEmpty ? "no file transfer with id '\(id)'" : "'\(id)' names several transfers"))
        }
        return first
    }

    static func untilFinal(_ client: ControlClient, _ transfers: [FileTransferInfo], progress: Bool) throws
        -> [FileTransferInfo]
    {
        var current = transfers
        let bar = progress ? ProgressBar() : nil
        while current.contains(where: { !$0.isFinal }) {
            usleep(250_000)
            current = try current.map { t in t.isFinal ? t : try one(client, id: t.id) }
            bar?.draw(current)
        }
        bar?.finish()
        return current
    }
}

/// One line per transfer, and the progress bar.
enum FileLines {
    static func size(_ n: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var v = Double(n)
        var u = 0
        while v >= 1024 && u < units.count - 1 {
            v /= 1024
            u += 1
        }
        return u == 0 ? "\(n) B" : String(format: "%.1f %@", v, units[u])
    }

    static func summary(_ t: FileTransferInfo) -> String {
        let arrow = t.direction == "in" ? "←" : "→"
        var line =
            "\(t.id.prefix(8))  \(arrow) \(Terminal.line(t.peerName))  \(Terminal.line(t.name))  \(size(t.size))  \(t.state)"
        if t.state == "transferring" && t.size > 0 { line += " \(t.bytesDone * 100 / t.size)%" }
        if let n = t.thumbnailBytes { line += "  thumbnail \(size(n))" }
        if let p = t.path {
            // The daemon's own copy is shown only to someone who may open it (the person's
            // own instance); under the system service it is the parley user's (0700), and
            // after a moved state directory the record names the old place: say how to get it.
            if access(p, R_OK) == 0 {
                line += "  \(Terminal.line(p))"
            } else if t.direction == "in" && t.state == "completed" {
                line += "  (`parley get \(t.id.prefix(8)) --to DIR` writes it out, as you)"
            }
        }
        if let e = t.error { line += "  (\(Terminal.line(e)))" }
        return line
    }
}

final class ProgressBar {
    private var drawn = false

    func draw(_ ts: [FileTransferInfo]) {
        let total = ts.reduce(0) { $0 + $1.size }
        let done = ts.reduce(0) { $0 + ($1.state == "completed" ? $1.size : $1.bytesDone) }
        let rate = ts.reduce(0) { $0 + ($1.rate ?? 0) }
        let fraction = total > 0 ? Double(done) / Double(total) : 1
        let width = 30
        let filled = Int(fraction * Double(width))
        var line = "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
        line += String(format: "%3d%% ", Int(fraction * 100)) + FileLines.size(done) + " / " + FileLines.size(total)
        if rate > 0 {
            line += "  " + FileLines.size(rate) + "/s"
            line += "  ETA \(max(0, total - done) / rate)s"
        }
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
        drawn = true
    }

    func finish() { if drawn { FileHandle.standardError.write(Data("\n".utf8)) } }
}

/// `--to DIR`: the file is written into DIR under the name it was offered with (not the
/// name it got in the daemon's directory, which is `big50 (1).bin` when a `big50.bin` was
/// already there), never replacing a file in DIR ("name (1).ext").
enum FileMove {
    /// The offered name (the daemon already sanitised it) when it is a plain file name,
    /// else the saved file's own name.
    static func targetName(offered: String, saved: String) -> String {
        let plain =
            !offered.isEmpty && offered != "." && offered != ".." && !offered.contains("/")
            && !offered.utf8.contains(0)
        return plain ? offered : (saved as NSString).lastPathComponent
    }

    static func split(_ name: String) -> (String, String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        return (String(name[..<dot]), String(name[dot...]))
    }
}
