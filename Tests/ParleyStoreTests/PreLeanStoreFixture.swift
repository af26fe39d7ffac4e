import Foundation
import GRDB
import XCTest

@testable import ParleyStore

/// A store in the shape the release before `lean-messages-v1` wrote, with messages of every
/// kind: Tests/fixtures/pre-lean-store, shared with the booted upgrade test
/// (Tests/system/test_upgrade_booted.py writes it with Python's sqlite3 through
/// make_store.py). messages.sql fills it; schema.sql is the empty store, generated from
/// `Schema.migrator` (`PreLeanStoreFixtureTests` keeps it equal to what the migrator writes).
enum PreLeanStoreFixture {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("fixtures/pre-lean-store")

    /// The last migration the previous release had.
    static var previousMigration: String {
        get throws {
            let migrations = Schema.migrator.migrations
            let lean = try XCTUnwrap(migrations.firstIndex(of: Schema.leanMessagesMigration))
            return migrations[lean - 1]
        }
    }

    /// messages.sql for `n` messages, `me` (64 hex digits) and `room` (32).
    static func messagesSQL(messages n: Int, me: String, room: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent("messages.sql"), encoding: .utf8)
            .replacingOccurrences(of: "{{N}}", with: "\(n)")
            .replacingOccurrences(of: "{{ME}}", with: me)
            .replacingOccurrences(of: "{{ROOM}}", with: room)
    }

    /// Writes the store at `path` (schema by `Schema.migrator`, rows by messages.sql).
    static func write(path: String, messages n: Int, me: String, room: String) throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in Schema.registerSearchFunction(db) }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try Schema.migrator.migrate(queue, upTo: previousMigration)
        let fill = try messagesSQL(messages: n, me: me, room: room)
        try queue.write { db in try db.execute(sql: fill) }
        try queue.close()
    }

    /// schema.sql's text for the database `db`: its application id, every object's SQL in
    /// creation order (not the tables SQLite makes itself: FTS5's shadow tables,
    /// sqlite_sequence) and every row of its ordinary tables.
    static func dump(_ db: Database) throws -> String {
        var lines = [
            "-- The empty store as the release before lean-messages-v1 left it. Generated: do not edit;",
            "-- regenerate with PARLEY_WRITE_PRE_LEAN_FIXTURE=1 swift test --filter PreLeanStoreFixtureTests.",
            "PRAGMA application_id = \(try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0);"
        ]
        let madeBySQLite = Set(
            try String.fetchAll(db, sql: "SELECT name FROM pragma_table_list WHERE type IN ('shadow', 'virtual')"))
        let objects = try Row.fetchAll(
            db, sql: "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
        var tables: [String] = []
        for object in objects {
            let name: String = object["name"]
            let type: String = object["type"]
            if name.hasPrefix("sqlite_") { continue }
            if type == "table", madeBySQLite.contains(name), !(object["sql"] as String).hasPrefix("CREATE VIRTUAL") {
                continue
            }
            lines.append((object["sql"] as String) + ";")
            if type == "table", !madeBySQLite.contains(name) { tables.append(name) }
        }
        if try db.tableExists("sqlite_sequence") { tables.append("sqlite_sequence") }
        for table in tables {
            let columns = try Row.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table])
                .map { "quote(\"\($0["name"] as String)\")" }
            lines += try String.fetchAll(
                db,
                sql: """
                    SELECT 'INSERT INTO "\(table)" VALUES(' || \(columns.joined(separator: " || ',' || ")) || ');'
                    FROM "\(table)" ORDER BY 1
                    """)
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// schema.sql is what `Schema.migrator` writes up to the previous release, and builds it.
final class PreLeanStoreFixtureTests: StoreDirectoryTestCase {
    func testTheSchemaFileIsTheStoreThePreviousReleaseWrote() throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in Schema.registerSearchFunction(db) }
        let migrated = try DatabaseQueue(path: directory + "/migrated.sqlite", configuration: configuration)
        try Schema.migrator.migrate(migrated, upTo: PreLeanStoreFixture.previousMigration)
        let expected = try migrated.read { db in try PreLeanStoreFixture.dump(db) }
        try migrated.close()
        let file = PreLeanStoreFixture.directory.appendingPathComponent("schema.sql")
        if ProcessInfo.processInfo.environment["PARLEY_WRITE_PRE_LEAN_FIXTURE"] == "1" {
            try expected.write(to: file, atomically: true, encoding: .utf8)
        }
        let text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertEqual(text, expected, "schema.sql is stale: regenerate it (see its first lines)")

        // Executing it gives the same database.
        let built = try DatabaseQueue(path: directory + "/built.sqlite", configuration: configuration)
        try built.writeWithoutTransaction { db in try db.execute(sql: text) }
        XCTAssertEqual(try built.read { db in try PreLeanStoreFixture.dump(db) }, expected)
        try built.close()
    }
}
