import Foundation
import XCTest

@testable import ParleyDaemon

#if canImport(Glibc)
    import Glibc
#endif

final class NotifyHookTests: XCTestCase {
    private let message = NotifyHookEnvironment.Message(
        fromName: "bob", fromFingerprint: "abcd-efgh", id: "00ff", receivedAt: 1_700_000_000_123,
        body: "secret\u{0}text", room: nil)

    private func parse(_ env: [String]) -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: env.map { entry in
                let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
            })
    }

    func testEnvironmentCarriesMetadataButNotTheBodyByDefault() {
        let base = [
            "PATH": "/usr/bin", "HOME": "/home/a", "NOTIFY_SOCKET": "/run/systemd/notify", "WATCHDOG_USEC": "1",
            "PARLEY_BODY": "forged", "PARLEY_FROM": "forged", "PARLEY_SOCKET": "/run/parley/control.sock"
        ]
        let env = NotifyHookEnvironment.make(base: base, message: message, includeBody: false)
        let vars = parse(env)
        XCTAssertEqual(vars["PARLEY_FROM"], "bob")
        XCTAssertEqual(vars["PARLEY_FROM_FINGERPRINT"], "abcd-efgh")
        XCTAssertEqual(vars["PARLEY_MESSAGE_ID"], "00ff")
        XCTAssertEqual(vars["PARLEY_RECEIVED_AT"], "1700000000123")
        XCTAssertNil(vars["PARLEY_BODY"], "an inherited PARLEY_BODY must not pass for the message text")
        XCTAssertNil(vars["PARLEY_ROOM"])
        XCTAssertNil(vars["NOTIFY_SOCKET"])
        XCTAssertNil(vars["WATCHDOG_USEC"])
        XCTAssertEqual(vars["PATH"], "/usr/bin")
        XCTAssertEqual(vars["PARLEY_SOCKET"], "/run/parley/control.sock", "a hook may call parley")
        XCTAssertEqual(env, env.sorted())
    }

    func testBodyOnlyWhenAskedAndWithoutNUL() {
        let vars = parse(NotifyHookEnvironment.make(base: [:], message: message, includeBody: true))
        XCTAssertEqual(vars["PARLEY_BODY"], "secret\u{FFFD}text")
        var inRoom = message
        inRoom.room = "lab"
        XCTAssertEqual(
            parse(NotifyHookEnvironment.make(base: [:], message: inRoom, includeBody: false))["PARLEY_ROOM"], "lab")
    }

    /// A real child: environment exactly as given, no inherited descriptors, its own
    /// process group, default signal dispositions.
    func testFileEventsCarryTheFileNameAndSizeAndForgedOnesAreDropped() {
        var offered = message
        offered.file = ("report\u{0}.pdf", 3_145_728, "offered")
        let vars = parse(
            NotifyHookEnvironment.make(
                base: ["PARLEY_FILE_NAME": "forged", "PARLEY_FILE_SIZE": "1"], message: offered, includeBody: false))
        XCTAssertEqual(vars["PARLEY_FILE_NAME"], "report\u{FFFD}.pdf")
        XCTAssertEqual(vars["PARLEY_FILE_SIZE"], "3145728")
        XCTAssertEqual(vars["PARLEY_FILE_EVENT"], "offered")
        let plain = parse(
            NotifyHookEnvironment.make(base: ["PARLEY_FILE_NAME": "forged"], message: message, includeBody: false))
        XCTAssertNil(plain["PARLEY_FILE_NAME"], "a message sets no file variables, and inherited ones are dropped")
    }

    func testSpawnedHookGetsACleanProcess() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-hook-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out").path
        // A descriptor opened without O_CLOEXEC, as a careless library might.
        let leaked = open(dir.appendingPathComponent("leak").path, O_CREAT | O_WRONLY, 0o600)
        XCTAssertGreaterThan(leaked, 2)
        defer { close(leaked) }
        let previous = signal(SIGTERM, SIG_IGN)
        defer { signal(SIGTERM, previous) }

        let script = """
            { env; echo "fds: $(ls /proc/self/fd | tr '\\n' ' ')"; echo "stat: $(cat /proc/$$/stat)"; \
            grep SigIgn /proc/$$/status; } > "$1"
            """
        let pid = try HookProcess.spawn(
            ["/bin/sh", "-c", script, "hook", out],
            environment: ["PARLEY_FROM=bob", "PATH=/usr/bin:/bin"])
        var status: Int32 = 0
        XCTAssertEqual(waitpid(pid, &status, 0), pid)
        XCTAssertEqual(status, 0)
        let text = try String(contentsOfFile: out, encoding: .utf8)
        XCTAssertTrue(text.contains("PARLEY_FROM=bob\n"))
        XCTAssertFalse(text.contains("HOME="), "only the given environment")
        let fds = text.components(separatedBy: "\n").first { $0.hasPrefix("fds: ") } ?? ""
        XCTAssertFalse(fds.split(separator: " ").contains(Substring(String(leaked))), "inherited descriptor: \(fds)")
        // /proc/PID/stat: pid (comm) state ppid pgrp ...
        let stat = text.components(separatedBy: "\n").first { $0.hasPrefix("stat: ") } ?? ""
        let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
        XCTAssertEqual(fields.count > 2 ? String(fields[2]) : nil, String(pid), "the hook leads its own process group")
        let ignored = text.components(separatedBy: "\n").first { $0.hasPrefix("SigIgn:") } ?? ""
        let mask = UInt64(ignored.split(separator: "\t").last ?? "", radix: 16) ?? UInt64.max
        XCTAssertEqual(mask & (1 << UInt64(SIGTERM - 1)), 0, "SIGTERM must not stay ignored in the hook")
    }

    func testSpawnFailureIsAnError() {
        XCTAssertThrowsError(try HookProcess.spawn(["/nonexistent/hook"], environment: []))
        XCTAssertThrowsError(try HookProcess.spawn([], environment: []))
    }
}
