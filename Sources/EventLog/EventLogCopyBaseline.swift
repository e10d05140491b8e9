import Foundation
public import Logging
public import PostgresNIO
import ServiceKit

/// The ceiling ingest's benchmark compares itself with: rows per second of a raw
/// `COPY … FROM STDIN` of rows shaped like the event log's into a copy of its table (same
/// columns and indexes), which is dropped afterwards.
public enum EventLogCopyBaseline {
    /// Copies `rows` rows into `<schema>.bench_copy` (made `LIKE <schema>.events`) and returns
    /// the rate.
    public static func rowsPerSecond(client: PostgresClient, schema: String, rows: Int, logger: Logger) async throws -> Double {
        let table = "\(schema).bench_copy"
        try await client.query("DROP TABLE IF EXISTS \(unescaped: table)", logger: logger)
        try await client.query("CREATE TABLE \(unescaped: table) (LIKE \(unescaped: schema).events INCLUDING ALL)", logger: logger)
        let frame =
            "\\\\x"
            + Array(
                #"{"type":"log","ts":1763780000000,"swarmId":"load","agentId":"agent-1","severity":"info","level":"info","message":"load test event 1"}"#
                    .utf8
            )
            .map { String(format: "%02x", $0) }.joined()
        let start = ContinuousClock.now
        try await client.withConnection { connection in
            // copyFrom quotes the table name as one identifier: name it via search_path.
            try await connection.query("SET search_path TO \(unescaped: schema)", logger: logger)
            try await connection.copyFrom(table: "bench_copy", logger: logger) { writer in
                var buffer = ByteBuffer()
                for row in 0..<rows {
                    buffer.writeString(
                        "bench\t\(row + 1)\tcopy-\(row)\tload\tagent-\(row % 8)\t2\t3\t2026-11-22 00:00:00+00\t2026-11-22 00:00:00+00\t\(frame)\n"
                    )
                    if buffer.readableBytes > 1 << 20 {
                        try await writer.write(buffer)
                        buffer.clear()
                    }
                }
                if buffer.readableBytes > 0 { try await writer.write(buffer) }
            }
        }
        let elapsed = ContinuousClock.now - start
        try await client.query("DROP TABLE \(unescaped: table)", logger: logger)
        return Double(rows) / elapsed.secondsDouble
    }
}
