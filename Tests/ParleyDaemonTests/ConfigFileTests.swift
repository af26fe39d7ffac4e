import Foundation
import ParleyControlProtocol
import ParleyNodeCore
import SeededRandom
import XCTest

@testable import ParleyConfiguration
@testable import ParleyDaemon

final class ConfigFileTests: XCTestCase {
    private let base = DaemonConfiguration(stateDirectory: "/var/lib/parley", hostName: "alice-laptop.lan")

    private func applied(_ text: String) throws -> DaemonConfiguration {
        var configuration = base
        try ConfigFile.parse(text).apply(to: &configuration)
        return configuration
    }

    /// The error thrown by parsing and applying `text`, or a failure if none is thrown.
    private func error(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> ConfigError? {
        do {
            _ = try applied(text)
            XCTFail("expected an error for \(text.debugDescription)", file: file, line: line)
            return nil
        } catch let error as ConfigError {
            return error
        } catch {
            XCTFail("unexpected error type \(error)", file: file, line: line)
            return nil
        }
    }

    private func message(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        error(text, file: file, line: line)?.description ?? ""
    }

    // MARK: - Defaults

    func testDefaults() {
        XCTAssertEqual(base.name, "alice-laptop")
        XCTAssertEqual(base.hostName, "alice-laptop.lan")
        XCTAssertEqual(base.listen, [try HostPort(parsing: "[::]:7744")])
        XCTAssertEqual(base.peers, [])
        XCTAssertNil(base.socketPath)
        XCTAssertTrue(base.mdnsEnabled)
        XCTAssertEqual(base.logLevel, .info)
        XCTAssertNil(base.networkKeyPath)
        XCTAssertNil(base.notifyCommand)
        XCTAssertFalse(base.notifyIncludeBody)
        XCTAssertTrue(base.readReceipts)
        XCTAssertEqual(base.durability, .full)
        XCTAssertEqual(base.handshakeTimeoutMilliseconds, 5_000)
        XCTAssertEqual(base.pingIntervalMilliseconds, 600_000)
        XCTAssertEqual(base.deadAfterMilliseconds, 15_000)
        XCTAssertNoThrow(try base.validate())
    }

    func testStateDirectoryDefaultFollowsSystemdThenXDGThenHome() {
        func stateDir(_ environment: [String: String], home: String? = "/home/alice") -> String {
            DaemonConfiguration.defaults(environment: environment, hostName: "h", homeDirectory: home).stateDirectory
        }
        XCTAssertEqual(stateDir(["STATE_DIRECTORY": "/var/lib/parley", "XDG_STATE_HOME": "/x"]), "/var/lib/parley")
        XCTAssertEqual(stateDir(["STATE_DIRECTORY": "/var/lib/parley:/var/lib/other"]), "/var/lib/parley")
        XCTAssertEqual(stateDir(["XDG_STATE_HOME": "/home/alice/.state"]), "/home/alice/.state/parley")
        XCTAssertEqual(stateDir(["XDG_STATE_HOME": "relative"]), "/home/alice/.local/state/parley")
        XCTAssertEqual(stateDir([:]), "/home/alice/.local/state/parley")
        XCTAssertEqual(stateDir([:], home: nil), "/var/lib/parley")
    }

    func testNameDefaultsToFirstLabelOfHostName() {
        XCTAssertEqual(DaemonConfiguration.displayName(fromHostName: "bob.example.org"), "bob")
        XCTAssertEqual(DaemonConfiguration.displayName(fromHostName: "bob"), "bob")
        XCTAssertEqual(DaemonConfiguration.displayName(fromHostName: ""), DaemonConfiguration.fallbackName)
        XCTAssertEqual(DaemonConfiguration.displayName(fromHostName: ".x"), DaemonConfiguration.fallbackName)
    }

    func testSystemDefaultsUseTheRealHostName() {
        let defaults = DaemonConfiguration.systemDefaults(environment: ["HOME": "/home/test"])
        XCTAssertFalse(defaults.hostName.isEmpty)
        XCTAssertEqual(defaults.stateDirectory, "/home/test/.local/state/parley")
    }

    func testDefaultConfigFilePath() {
        XCTAssertEqual(
            ConfigFile.defaultPath(environment: ["CONFIGURATION_DIRECTORY": "/etc/parley"], homeDirectory: "/h"),
            "/etc/parley/parleyd.toml")
        XCTAssertEqual(
            ConfigFile.defaultPath(environment: ["XDG_CONFIG_HOME": "/h/.cfg"], homeDirectory: "/h"),
            "/h/.cfg/parley/parleyd.toml")
        XCTAssertEqual(ConfigFile.defaultPath(environment: [:], homeDirectory: "/h"), "/h/.config/parley/parleyd.toml")
        XCTAssertNil(ConfigFile.defaultPath(environment: [:], homeDirectory: nil))
    }

    // MARK: - Every option

    func testEveryOption() throws {
        let configuration = try applied(
            """
            [parleyd]
            state_dir = "/srv/parley"
            name = "Alice Ä"
            host_name = "alice-box"
            listen = ["0.0.0.0:7000", "[::1]:0"]
            peers = ["bob.lan:7744", "[fd00::2]:7744", '10.0.0.3:1']
            socket = "/run/parley/ctl.sock"
            mdns = false
            log_level = "debug"
            network_key = "/var/lib/parley/network.key"
            notify_command = ["/usr/bin/notify-send", "Parley"]
            notify_include_body = true
            read_receipts = false
            durability = "normal"
            handshake_timeout_ms = 2_500
            ping_interval_ms = 100
            dead_after_ms = 300
            """)
        XCTAssertEqual(configuration.stateDirectory, "/srv/parley")
        XCTAssertEqual(configuration.name, "Alice Ä")
        XCTAssertEqual(configuration.hostName, "alice-box")
        XCTAssertEqual(configuration.listen.map(\.description), ["0.0.0.0:7000", "[::1]:0"])
        XCTAssertEqual(configuration.peers.map(\.description), ["bob.lan:7744", "[fd00::2]:7744", "10.0.0.3:1"])
        XCTAssertEqual(configuration.socketPath, "/run/parley/ctl.sock")
        XCTAssertFalse(configuration.mdnsEnabled)
        XCTAssertEqual(configuration.logLevel, .debug)
        XCTAssertEqual(configuration.networkKeyPath, "/var/lib/parley/network.key")
        XCTAssertEqual(configuration.notifyCommand, ["/usr/bin/notify-send", "Parley"])
        XCTAssertTrue(configuration.notifyIncludeBody)
        XCTAssertFalse(configuration.readReceipts)
        XCTAssertEqual(configuration.durability, .normal)
        XCTAssertEqual(configuration.handshakeTimeoutMilliseconds, 2500)
        XCTAssertEqual(configuration.pingIntervalMilliseconds, 100)
        XCTAssertEqual(configuration.deadAfterMilliseconds, 300)
        XCTAssertNoThrow(try configuration.validate())
    }

    func testEmptyFileAndCommentsChangeNothing() throws {
        XCTAssertEqual(try applied(""), base)
        XCTAssertEqual(try applied("\n\n   \n\t\n"), base)
        XCTAssertEqual(try applied("# only a comment\n  # indented # comment\n[parleyd] # trailing\n"), base)
        let configuration = try applied("mdns = false # not on this network\nname = \"a # b\" # hash in string")
        XCTAssertFalse(configuration.mdnsEnabled)
        XCTAssertEqual(configuration.name, "a # b")
    }

    func testWhitespaceAndCRLF() throws {
        let configuration = try applied("  name\t=\t'bob'  \r\nmdns=false\r\n")
        XCTAssertEqual(configuration.name, "bob")
        XCTAssertFalse(configuration.mdnsEnabled)
    }

    func testEntriesKeepOrderAndLineNumbers() throws {
        let file = try ConfigFile.parse("# c\nname = \"x\"\n\nmdns = true\n")
        XCTAssertEqual(file.entries.map(\.key), ["name", "mdns"])
        XCTAssertEqual(file.entries.map(\.line), [2, 4])
        XCTAssertEqual(file["mdns"]?.value, .boolean(true))
    }

    // MARK: - Strings

    func testBasicStringEscapes() throws {
        let file = try ConfigFile.parse(#"name = "q\" b\\ n\n t\t u\u00e9 U\U0001F600 e\u0041""#)
        XCTAssertEqual(file["name"]?.value, .string("q\" b\\ n\n t\t u\u{e9} U\u{1F600} eA"))
        XCTAssertEqual(try ConfigFile.parse(#"name = "\b\f\r""#)["name"]?.value, .string("\u{8}\u{c}\r"))
    }

    func testLiteralStringsTakeBackslashesVerbatim() throws {
        XCTAssertEqual(try ConfigFile.parse(#"name = 'C:\temp\n'"#)["name"]?.value, .string(#"C:\temp\n"#))
    }

    func testBadStrings() {
        XCTAssertEqual(message(#"name = "abc"#), "parleyd.toml:1: 'name': unterminated string (missing closing \")")
        XCTAssertEqual(message("name = 'abc"), "parleyd.toml:1: 'name': unterminated string (missing closing ')")
        XCTAssertTrue(message(#"name = "\q""#).contains("unknown escape '\\q'"))
        XCTAssertTrue(message(#"name = "\u12""#).contains("needs 4 hex digits"))
        XCTAssertTrue(message(#"name = "\uD800""#).contains("is not a Unicode character"))
        XCTAssertTrue(message(#"name = "\U00110000""#).contains("is not a Unicode character"))
        XCTAssertTrue(message("name = \"a\u{1}b\"").contains("control character (0x01) in string"))
        XCTAssertTrue(message("name = \"\"\"multi\"\"\"").contains("multi-line strings"))
        XCTAssertTrue(message("name = '''multi'''").contains("multi-line strings"))
    }

    // MARK: - Bad values, one per type

    func testWrongTypesNameKeyAndLine() {
        XCTAssertEqual(message("\n\nmdns = \"yes\""), "parleyd.toml:3: 'mdns' must be true or false, got \"yes\"")
        XCTAssertEqual(message("read_receipts = 1"), "parleyd.toml:1: 'read_receipts' must be true or false, got 1")
        XCTAssertEqual(
            message("notify_include_body = [\"x\"]"),
            "parleyd.toml:1: 'notify_include_body' must be true or false, got [\"x\"]")
        XCTAssertEqual(message("name = true"), "parleyd.toml:1: 'name' must be a string, got true")
        XCTAssertEqual(message("state_dir = 5"), "parleyd.toml:1: 'state_dir' must be a string, got 5")
        XCTAssertEqual(
            message("listen = \"[::]:7744\""),
            "parleyd.toml:1: 'listen' must be an array of \"HOST:PORT\" strings, like [\"[::]:7744\"], got \"[::]:7744\""
        )
        XCTAssertEqual(
            message("peers = 7744"),
            "parleyd.toml:1: 'peers' must be an array of \"HOST:PORT\" strings, like [\"[::]:7744\"], got 7744")
        XCTAssertEqual(
            message("notify_command = \"notify-send\""),
            "parleyd.toml:1: 'notify_command' must be an array of strings, got \"notify-send\"")
        XCTAssertEqual(
            message("log_level = \"verbose\""),
            "parleyd.toml:1: 'log_level' must be one of \"error\", \"warning\", \"info\", \"debug\", got \"verbose\"")
        XCTAssertEqual(
            message("durability = \"fast\""),
            "parleyd.toml:1: 'durability' must be one of \"full\", \"normal\", got \"fast\"")
        XCTAssertEqual(
            message("ping_interval_ms = \"5s\""),
            "parleyd.toml:1: 'ping_interval_ms' must be an integer number of milliseconds from 10 to 3600000, got \"5s\""
        )
        XCTAssertEqual(
            message("dead_after_ms = 9"),
            "parleyd.toml:1: 'dead_after_ms' must be an integer number of milliseconds from 10 to 3600000, got 9")
        XCTAssertTrue(message("handshake_timeout_ms = 3600001").contains("'handshake_timeout_ms' must be an integer"))
        XCTAssertTrue(message("handshake_timeout_ms = -5").contains("got -5"))
    }

    func testValuesOfTheRightTypeThatMakeNoSense() {
        XCTAssertEqual(
            message("state_dir = \"relative/dir\""),
            "parleyd.toml:1: 'state_dir': must be an absolute path (starting with '/')")
        XCTAssertEqual(
            message("network_key = \"key.txt\""),
            "parleyd.toml:1: 'network_key': must be an absolute path (starting with '/')")
        XCTAssertTrue(
            message("socket = \"/\(String(repeating: "s", count: 120))\"")
                .contains("'socket': is longer than 107 bytes"))
        XCTAssertEqual(message("name = \"\""), "parleyd.toml:1: 'name': must not be empty")
        XCTAssertEqual(
            message("name = \"\(String(repeating: "n", count: 65))\""),
            "parleyd.toml:1: 'name': is longer than 64 bytes")
        XCTAssertEqual(message(#"name = "a\nb""#), "parleyd.toml:1: 'name': must not contain control characters")
        XCTAssertTrue(
            message("host_name = \"bad host\"").contains("'host_name': \"bad host\" is not a valid host name"))
        XCTAssertEqual(
            message("host_name = \"10.0.0.1\""),
            "parleyd.toml:1: 'host_name': must be a host name, not an IP address")
        XCTAssertEqual(message("listen = []"), "parleyd.toml:1: 'listen': must list at least one address to listen on")
        XCTAssertEqual(
            message("listen = [\"[::]:7744\", \"0.0.0.0\"]"),
            "parleyd.toml:1: 'listen': missing port in \"0.0.0.0\" (expected HOST:PORT, e.g. 0.0.0.0:7744 or [::]:7744)"
        )
        XCTAssertTrue(message("peers = [\"::1:7744\"]").contains("'peers': IPv6 addresses must be in brackets"))
        XCTAssertTrue(message("peers = [\"bob:70000\"]").contains("'peers': port 70000 is out of range"))
        XCTAssertTrue(message("notify_command = []").contains("'notify_command': must name a program"))
        XCTAssertTrue(message("notify_command = [\"\"]").contains("'notify_command': must name a program"))
        XCTAssertTrue(message(#"notify_command = ["a\u0000"]"#).contains("must not contain a NUL byte"))
        XCTAssertNoThrow(try applied("peers = []"))
    }

    // MARK: - Keys and structure

    func testUnknownKeyNamesLineAndSuggests() {
        let text = "# 1\n# 2\n# 3\n# 4\n# 5\n# 6\nlisen = [\"[::]:1\"]"
        XCTAssertEqual(message(text), "parleyd.toml:7: unknown key 'lisen' (did you mean 'listen'?)")
        XCTAssertEqual(
            message("log-level = \"info\""),
            "parleyd.toml:1: unknown key 'log-level' (did you mean 'log_level'?)")
        XCTAssertEqual(
            message("read_reciepts = true"),
            "parleyd.toml:1: unknown key 'read_reciepts' (did you mean 'read_receipts'?)")
        XCTAssertEqual(message("colour = true"), "parleyd.toml:1: unknown key 'colour'")
        XCTAssertEqual(
            error("lisen = 1"),
            .unknownKey(ConfigLocation(file: "parleyd.toml", line: 1), key: "lisen", suggestion: "listen"))
    }

    func testDuplicateKey() {
        XCTAssertEqual(
            message("mdns = true\nname = \"a\"\nmdns = false"),
            "parleyd.toml:3: duplicate key 'mdns' (first set on line 1)")
    }

    func testTables() {
        XCTAssertEqual(
            message("[server]\nmdns = true"),
            "parleyd.toml:1: unsupported table [server]; only [parleyd] is allowed")
        XCTAssertEqual(message("mdns = true\n[parleyd]"), "parleyd.toml:2: [parleyd] must come before any key")
        XCTAssertEqual(message("[parleyd]\n[parleyd]"), "parleyd.toml:2: [parleyd] appears twice")
        XCTAssertTrue(message("[[parleyd]]").contains("arrays of tables"))
        XCTAssertTrue(message("[parleyd.sub]").contains("expected ']'"))
        XCTAssertNoThrow(try applied("[ parleyd ]\nmdns = false"))
    }

    func testSyntaxErrors() {
        XCTAssertEqual(message("mdns true"), "parleyd.toml:1: expected '=' after key 'mdns'")
        XCTAssertEqual(message("mdns ="), "parleyd.toml:1: 'mdns': missing value after '='")
        XCTAssertTrue(message("mdns = yes").contains("'mdns': expected a value"))
        XCTAssertTrue(message("mdns = truely").contains("expected true or false, got \"truely\""))
        XCTAssertTrue(message("mdns = true false").contains("unexpected \"false\" after the value"))
        XCTAssertTrue(message("parleyd.mdns = true").contains("dotted keys are not supported"))
        XCTAssertTrue(message("\"mdns\" = true").contains("quoted keys are not supported"))
        XCTAssertTrue(message("= true").contains("expected a key"))
        XCTAssertTrue(message("ping_interval_ms = 1.5").contains("no floats or dates"))
        XCTAssertTrue(message("ping_interval_ms = 0x10").contains("only decimal integers"))
        XCTAssertTrue(message("ping_interval_ms = 0100").contains("invalid integer"))
        XCTAssertTrue(message("ping_interval_ms = 1__0").contains("invalid integer"))
        XCTAssertTrue(message("ping_interval_ms = _10").contains("expected a value"))
        XCTAssertTrue(message("ping_interval_ms = 99999999999999999999").contains("out of range"))
        XCTAssertEqual(message("peers = [\"a:1\""), "parleyd.toml:1: 'peers': missing ']' to close the array")
        XCTAssertEqual(
            message("peers = [\"a:1\", # comment\n"),
            "parleyd.toml:2: 'peers': missing ']' to close the array", "the error is where the file ended")
        XCTAssertTrue(message("peers = [1, 2]").contains("arrays may only contain strings"))
        XCTAssertTrue(message("peers = [[\"a:1\"]]").contains("arrays may only contain strings"))
        XCTAssertTrue(message("peers = [\"a:1\" \"b:2\"]").contains("expected ',' or ']'"))
        XCTAssertTrue(message("name = {a = 1}").contains("inline tables"))
        XCTAssertTrue(message("# bell \u{7}").contains("control character (0x07) in comment"))
    }

    func testArrayForms() throws {
        XCTAssertEqual(try ConfigFile.parse("a = []")["a"]?.value, .stringArray([]))
        XCTAssertEqual(try ConfigFile.parse("a = [ 'x' , \"y\", ]")["a"]?.value, .stringArray(["x", "y"]))
    }

    func testMultiLineArraysAsTOMLAllows() throws {
        let file = try ConfigFile.parse(
            """
            [parleyd]
            peers = [
                "10.0.0.1:7744",   # the desk
                'laptop.lan:7744', # comment after a trailing comma
                # a whole comment line
            ]
            mdns = false
            """)
        XCTAssertEqual(file["peers"]?.value, .stringArray(["10.0.0.1:7744", "laptop.lan:7744"]))
        XCTAssertEqual(file["peers"]?.line, 2)
        XCTAssertEqual(file["mdns"]?.line, 7, "line numbers go on after the array")
        XCTAssertEqual(try ConfigFile.parse("a = [\n]\r\nb = 1")["b"]?.line, 3)
        // Errors inside name their own line.
        XCTAssertEqual(
            message("peers = [\n  \"a:1\",\n  2,\n]"),
            "parleyd.toml:3: 'peers': arrays may only contain strings, got \"2,\"")
        XCTAssertTrue(message("peers = [\n\"a:1\"\n\"b:1\"]").contains("parleyd.toml:3: 'peers': expected ',' or ']'"))
        XCTAssertTrue(message("peers = [\n# bell \u{7}\n]").contains("parleyd.toml:2"))
        // An array never closed is refused after a bounded number of lines.
        let open = "peers = [\n" + String(repeating: "\n", count: ConfigFile.maxStatementLines + 5)
        XCTAssertTrue(message(open).contains("longer than \(ConfigFile.maxStatementLines) lines"), message(open))
    }

    func testIntegers() throws {
        XCTAssertEqual(try ConfigFile.parse("a = +1_000")["a"]?.value, .integer(1000))
        XCTAssertEqual(try ConfigFile.parse("a = -0")["a"]?.value, .integer(0))
        XCTAssertEqual(try ConfigFile.parse("a = -9223372036854775808")["a"]?.value, .integer(Int64.min))
    }

    // MARK: - Limits

    func testSizeLimit() {
        let padding = String(repeating: "# padding padding padding\n", count: ConfigFile.maxFileBytes / 26 + 1)
        XCTAssertGreaterThan(padding.utf8.count, ConfigFile.maxFileBytes)
        XCTAssertEqual(error(padding), .fileTooLarge(file: "parleyd.toml", limit: 65536))
        // Just under the limit is fine.
        let fits = String(repeating: "#\n", count: ConfigFile.maxFileBytes / 2)
        XCTAssertNoThrow(try ConfigFile.parse(fits))
    }

    func testLineLengthLimit() {
        let long = "name = \"" + String(repeating: "x", count: ConfigFile.maxLineBytes) + "\""
        XCTAssertEqual(
            error("mdns = true\n" + long),
            .lineTooLong(ConfigLocation(file: "parleyd.toml", line: 2), limit: ConfigFile.maxLineBytes))
    }

    func testLoadFromDisk() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-config-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let path = directory.appendingPathComponent("parleyd.toml").path
        try Data("mdns = \"yes\"\n".utf8).write(to: URL(fileURLWithPath: path))
        do {
            var configuration = base
            try ConfigFile.load(path: path).apply(to: &configuration)
            XCTFail("expected an error")
        } catch {
            XCTAssertEqual(error.description, "\(path):1: 'mdns' must be true or false, got \"yes\"")
        }

        try Data([0x6e, 0x61, 0x6d, 0x65, 0x20, 0x3d, 0x20, 0x22, 0xff, 0x22]).write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try ConfigFile.load(path: path)) {
            XCTAssertEqual($0 as? ConfigError, .notUTF8(file: path))
        }

        try Data(repeating: UInt8(ascii: "#"), count: ConfigFile.maxFileBytes + 10).write(
            to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try ConfigFile.load(path: path)) {
            XCTAssertEqual($0 as? ConfigError, .fileTooLarge(file: path, limit: ConfigFile.maxFileBytes))
        }

        XCTAssertThrowsError(try ConfigFile.load(path: directory.path)) {
            XCTAssertEqual($0 as? ConfigError, .unreadable(path: directory.path, reason: "not a regular file"))
        }
        let missing = directory.appendingPathComponent("missing.toml").path
        XCTAssertNil(try ConfigFile.loadIfPresent(path: missing))
        XCTAssertThrowsError(try ConfigFile.load(path: missing)) {
            XCTAssertEqual($0 as? ConfigError, .unreadable(path: missing, reason: "No such file or directory"))
        }
    }

    /// Cheap stand-in for the fuzzer: random bytes and mutations of a valid file must
    /// give a value or a ConfigError, never a trap.
    func testArbitraryInputNeverTraps() {
        var generator = SplitMix64(seed: 0x5eed)
        let valid = Array(
            "[parleyd]\nname = \"a\\u00e9\" # c\npeers = ['x:1', \"[::1]:2\"]\nping_interval_ms = 1_000\n".utf8)
        let alphabet = Array("[]\"'\\=#,:.-_ \t\n\r0123456789abcdefuUtrx{}+".utf8) + [0, 0x7f, 0xc3, 0xa9]
        for _ in 0..<3000 {
            var bytes = valid
            for _ in 0..<Int(generator.next() % 6 + 1) {
                let position = Int(generator.next() % UInt64(bytes.count + 1))
                let byte = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                switch generator.next() % 3 {
                case 0: bytes.insert(byte, at: position)
                case 1: if position < bytes.count { bytes.remove(at: position) }
                default: if position < bytes.count { bytes[position] = byte }
                }
            }
            var configuration = base
            do {
                try ConfigFile.parse(String(decoding: bytes, as: UTF8.self)).apply(to: &configuration)
            } catch {
                XCTAssertFalse(error.description.isEmpty)
            }
        }
    }

    // MARK: - Flags over file, reload

    func testFlagsWinOverFile() throws {
        let file = try ConfigFile.parse("name = \"from-file\"\nmdns = true\nlog_level = \"debug\"\npeers = [\"a:1\"]")
        var flags = ConfigOverrides()
        flags.name = "from-flag"
        flags.mdnsEnabled = false
        flags.peers = [try HostPort(parsing: "b:2"), try HostPort(parsing: "c:3")]
        let merged = try DaemonConfiguration.merged(defaults: base, file: file, flags: flags)
        XCTAssertEqual(merged.name, "from-flag")
        XCTAssertFalse(merged.mdnsEnabled)
        XCTAssertEqual(merged.logLevel, .debug, "file value kept where no flag is given")
        XCTAssertEqual(merged.peers.map(\.description), ["b:2", "c:3"], "repeatable flags replace the file's list")
        XCTAssertEqual(merged.durability, .full, "default kept where neither sets it")
    }

    func testEveryOverrideApplies() throws {
        var flags = ConfigOverrides()
        flags.stateDirectory = "/s"
        flags.name = "n"
        flags.hostName = "h"
        flags.listen = [try HostPort(parsing: "[::1]:0")]
        flags.peers = [try HostPort(parsing: "p:1")]
        flags.socketPath = "/run/x.sock"
        flags.mdnsEnabled = false
        flags.logLevel = .error
        flags.networkKeyPath = "/k"
        flags.notifyCommand = ["/bin/true"]
        flags.notifyIncludeBody = true
        flags.readReceipts = false
        flags.durability = .normal
        flags.handshakeTimeoutMilliseconds = 11
        flags.pingIntervalMilliseconds = 12
        flags.deadAfterMilliseconds = 13
        flags.newIdentities = .hold
        flags.receiveQuota = ReceiveQuota(
            stranger: .init(messages: 1, bytes: 2), correspondent: .init(messages: 3, bytes: 4),
            total: .init(messages: 5, bytes: 6), diskFloorBytes: 7)
        flags.maxSessions = 8
        flags.downloadDirectory = "/d"
        flags.fileAutoAcceptBytes = 9
        flags.unusedIdentityLifetimeSeconds = 9
        let merged = try DaemonConfiguration.merged(defaults: base, file: nil, flags: flags)
        // Every option differs from the defaults, so every key shows up as changed.
        let differences = merged.reloadableDifferences(from: base)
        XCTAssertEqual(Set(differences.reloadable + differences.needsRestart), Set(ConfigKey.allCases.map(\.rawValue)))
    }

    func testUnusedIdentityLifetimeIsSecondsFromOneUpToTenYears() throws {
        var configuration = base
        try ConfigFile.parse("unused_identity_lifetime_s = 2").apply(to: &configuration)
        XCTAssertEqual(configuration.unusedIdentityLifetimeSeconds, 2)
        for bad in ["0", "-1", "315360001", "\"86400\"", "1.5"] {
            var c = base
            XCTAssertThrowsError(
                try ConfigFile.parse("unused_identity_lifetime_s = \(bad)").apply(to: &c), "refuses \(bad)")
        }
    }

    func testNameFollowsHostNameUnlessSet() throws {
        var flags = ConfigOverrides()
        flags.hostName = "bob-box.lan"
        XCTAssertEqual(try DaemonConfiguration.merged(defaults: base, file: nil, flags: flags).name, "bob-box")
        let file = try ConfigFile.parse("name = \"Bob\"")
        XCTAssertEqual(try DaemonConfiguration.merged(defaults: base, file: file, flags: flags).name, "Bob")
        XCTAssertEqual(
            try DaemonConfiguration.merged(defaults: base, file: nil, flags: ConfigOverrides()).name,
            "alice-laptop")
    }

    func testMergedValidatesFlagsAndCombinations() throws {
        var flags = ConfigOverrides()
        // A ping interval longer than dead-after is the default now (docs/PROTOCOL.md "Liveness").
        flags.pingIntervalMilliseconds = 20_000
        XCTAssertEqual(
            try DaemonConfiguration.merged(defaults: base, file: nil, flags: flags).pingIntervalMilliseconds, 20_000)
        flags.pingIntervalMilliseconds = 5
        XCTAssertThrowsError(try DaemonConfiguration.merged(defaults: base, file: nil, flags: flags))
        flags = ConfigOverrides()
        flags.listen = []
        XCTAssertThrowsError(try DaemonConfiguration.merged(defaults: base, file: nil, flags: flags)) {
            XCTAssertEqual(
                $0 as? ConfigError,
                .invalidSetting(key: "listen", reason: "must list at least one address to listen on"))
        }
        flags = ConfigOverrides()
        flags.socketPath = "relative.sock"
        XCTAssertThrowsError(try DaemonConfiguration.merged(defaults: base, file: nil, flags: flags))
        // A file is checked the same way.
        let file = try ConfigFile.parse("dead_after_ms = 4")
        XCTAssertThrowsError(try DaemonConfiguration.merged(defaults: base, file: file, flags: ConfigOverrides()))
    }

    func testReloadableDifferences() throws {
        XCTAssertTrue(base.reloadableDifferences(from: base) == ([], []))
        var changed = base
        changed.name = "x"
        changed.peers = [try HostPort(parsing: "p:1")]
        changed.logLevel = .debug
        changed.notifyCommand = ["/bin/true"]
        changed.notifyIncludeBody = true
        changed.readReceipts = false
        changed.listen = [try HostPort(parsing: "0.0.0.0:1")]
        changed.durability = .normal
        let differences = changed.reloadableDifferences(from: base)
        XCTAssertEqual(
            differences.reloadable,
            ["name", "peers", "log_level", "notify_command", "notify_include_body", "read_receipts"])
        XCTAssertEqual(differences.needsRestart, ["listen", "durability"])
        XCTAssertEqual(
            Set(ConfigKey.allCases.filter(\.isReloadable).map(\.rawValue)),
            ["name", "peers", "log_level", "notify_command", "notify_include_body", "read_receipts"])
    }

    // MARK: - The shipped example

    private var exampleURL: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("systemd/parleyd.toml.example")
    }

    func testExampleFileParsesAsShipped() throws {
        let file = try ConfigFile.load(path: exampleURL.path)
        var configuration = base
        try file.apply(to: &configuration)
        XCTAssertEqual(configuration, base, "the shipped example only has comments and the table header")
    }

    /// Uncommenting every "#key = value" line must give a valid file that mentions
    /// every option, shows the real defaults, and says correctly which need a restart.
    func testExampleFileDocumentsEveryOptionCorrectly() throws {
        let lines = try String(contentsOf: exampleURL, encoding: .utf8).components(separatedBy: "\n")
        var uncommented: [String] = []
        var reloadNote: [String: String] = [:]
        var comment: [String] = []
        for line in lines {
            if line.hasPrefix("#"), let first = line.dropFirst().first, first.isLetter {
                let key = String(line.dropFirst().prefix { $0 != " " && $0 != "=" })
                uncommented.append(String(line.dropFirst()))
                let block = comment.joined(separator: " ")
                reloadNote[key] =
                    block.contains("(reload)") ? "reload" : block.contains("(restart)") ? "restart" : "none"
                comment = []
            } else if line.hasPrefix("#") {
                comment.append(line)
            } else {
                uncommented.append(line)
                if line.trimmingCharacters(in: .whitespaces).isEmpty { comment = [] }
            }
        }
        let file = try ConfigFile.parse(uncommented.joined(separator: "\n"))
        XCTAssertEqual(Set(file.entries.map(\.key)), Set(ConfigKey.allCases.map(\.rawValue)), "every option documented")
        var configuration = base
        try file.apply(to: &configuration)
        XCTAssertNoThrow(try configuration.validate())

        for key in ConfigKey.allCases {
            XCTAssertEqual(
                reloadNote[key.rawValue], key.isReloadable ? "reload" : "restart",
                "example marks \(key.rawValue) correctly")
        }
        // Values shown without "Example value" are the defaults.
        XCTAssertEqual(configuration.listen, base.listen)
        XCTAssertEqual(configuration.mdnsEnabled, base.mdnsEnabled)
        XCTAssertEqual(configuration.logLevel, base.logLevel)
        XCTAssertEqual(configuration.notifyIncludeBody, base.notifyIncludeBody)
        XCTAssertEqual(configuration.readReceipts, base.readReceipts)
        XCTAssertEqual(configuration.durability, base.durability)
        XCTAssertEqual(configuration.handshakeTimeoutMilliseconds, base.handshakeTimeoutMilliseconds)
        XCTAssertEqual(configuration.pingIntervalMilliseconds, base.pingIntervalMilliseconds)
        XCTAssertEqual(configuration.deadAfterMilliseconds, base.deadAfterMilliseconds)
        XCTAssertEqual(configuration.receiveQuota, base.receiveQuota)
        XCTAssertEqual(configuration.maxSessions, base.maxSessions)
        XCTAssertEqual(configuration.unusedIdentityLifetimeSeconds, base.unusedIdentityLifetimeSeconds)
        XCTAssertEqual(configuration.unusedIdentityLifetimeSeconds, 86_400, "a day")
        XCTAssertEqual(configuration.stateDirectory, "/var/lib/parley")
    }
}

/// Deterministic pseudo-random numbers, so a failing input can be reproduced.
