/// One versioned schema change of a service. Versions start at 1 and never change once
/// released; the SQL runs with the service's schema first on the `search_path`, so it names
/// tables without a schema.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    /// One or more statements, run together in the migration's transaction.
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// FNV-1a of the SQL: detects a migration edited after it was applied.
    var checksum: Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in self.sql.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        return Int64(bitPattern: hash)
    }
}
