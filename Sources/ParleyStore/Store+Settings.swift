import GRDB

// Small named values for node settings (e.g. the chosen display name), kept with the rest
// of the state so one file is the whole node.
extension Store {
    /// Longest setting key accepted: keys are names chosen in code, not data.
    public static let maximumSettingKeyLength = 256

    public func setting(_ key: String) throws(StoreError) -> String? {
        try Self.validateSettingKey(key)
        return try read { db in
            let statement = try db.cachedStatement(sql: "SELECT value FROM setting WHERE key = ?")
            return try String.fetchOne(statement, arguments: [key])
        }
    }

    /// Stores `value` under `key`; nil removes the key.
    public func setSetting(_ key: String, _ value: String?) throws(StoreError) {
        try Self.validateSettingKey(key)
        if let value { try InputValidation.requireNoNUL(value, "setting value") }
        try write { db in
            if let value {
                let upsert = try db.cachedStatement(
                    sql: """
                        INSERT INTO setting (key, value) VALUES (?, ?)
                        ON CONFLICT (key) DO UPDATE SET value = excluded.value
                        """)
                try upsert.execute(arguments: [key, value])
            } else {
                let delete = try db.cachedStatement(sql: "DELETE FROM setting WHERE key = ?")
                try delete.execute(arguments: [key])
            }
        }
    }

    private static func validateSettingKey(_ key: String) throws(StoreError) {
        guard !key.isEmpty, key.utf8.count <= maximumSettingKeyLength else {
            throw .invalidArgument("setting key must be 1...\(maximumSettingKeyLength) bytes")
        }
        try InputValidation.requireNoNUL(key, "setting key")
    }
}
