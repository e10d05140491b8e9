public import Logging
public import PostgresNIO
import ServiceKit

/// The ceiling ingest's benchmark compares itself with: rows per second of a raw
/// `COPY … FROM STDIN` of the rows ingest just stored, into a table made like the event log
/// (partitioned by day, the same columns and indexes), which is dropped afterwards. The COPY
/// skips what ingest does besides storing: no duplicate check, no seq lock, no publish.
public enum EventLogCopyBaseline {
    /// What a baseline run copied.
    public struct Run: Sendable {
        /// Rows copied.
        public var rows: Int
        /// Tenants they were dealt to.
        public var tenants: Int
        /// The COPY's rate.
        public var rowsPerSecond: Double
    }

    /// Copies the last `rows` rows of `sourceTenant` (or fewer, if it has fewer) into
    /// `<schema>.bench_copy`, once for each count in `tenants`: the rows dealt in turn to that
    /// many tenants, each tenant's seqs from 1, committed now. Only the COPY is timed (the text
    /// is made before).
    public static func run(
        client: PostgresClient,
        schema: String,
        sourceTenant: String,
        rows: Int,
        tenants: [Int],
        logger: Logger
    ) async throws -> [Run] {
        let source = try await client.query(
            """
            SELECT msg_id, swarm_id, agent_id, kind, severity, occurred_at::text, frame, now()::text
            FROM \(unescaped: schema).events WHERE tenant_id = \(sourceTenant) ORDER BY seq DESC LIMIT \(rows)
            """,
            logger: logger
        )
        // Timestamps as Postgres writes them, which COPY reads back.
        var stored: [Row] = []
        var now = ""
        for try await (msgID, swarm, agent, kind, severity, occurred, frame, committed) in source.decode(
            (String, String, String, Int16, Int16, String, ByteBuffer, String).self
        ) {
            stored.append(Row(msgID: msgID, swarmID: swarm, agentID: agent, kind: kind, severity: severity, occurredAt: occurred, frame: frame))
            now = committed
        }
        guard !stored.isEmpty else { return [] }
        var runs: [Run] = []
        for count in tenants {
            let text = Self.copyText(stored, tenants: max(1, count), committedAt: now)
            let table = "\(schema).bench_copy"
            try await client.query("DROP TABLE IF EXISTS \(unescaped: table)", logger: logger)
            try await client.query(
                "CREATE TABLE \(unescaped: table) (LIKE \(unescaped: schema).events INCLUDING ALL) PARTITION BY RANGE (committed_at)",
                logger: logger
            )
            let elapsed = try await client.withConnection { connection in
                // copyFrom quotes the table name as one identifier: name it via search_path.
                try await connection.query("SET search_path TO \(unescaped: schema)", logger: logger)
                try await connection.query("SELECT create_day_partition('bench_copy', (now() AT TIME ZONE 'UTC')::date)", logger: logger)
                let start = ContinuousClock.now
                try await connection.copyFrom(table: "bench_copy", logger: logger) { writer in
                    for chunk in text { try await writer.write(chunk) }
                }
                return ContinuousClock.now - start
            }
            try await client.query("DROP TABLE \(unescaped: table)", logger: logger)
            runs.append(Run(rows: stored.count, tenants: max(1, count), rowsPerSecond: Double(stored.count) / elapsed.secondsDouble))
        }
        return runs
    }

    /// A stored row to copy.
    struct Row {
        var msgID: String
        var swarmID: String
        var agentID: String
        var kind: Int16
        var severity: Int16
        /// As Postgres's text output wrote it.
        var occurredAt: String
        var frame: ByteBuffer
    }

    /// COPY's text format of `rows`, in chunks of about a MiB: dealt to `tenants` tenants,
    /// each with seqs from 1, committed at `committedAt` (Postgres's text of a timestamp).
    static func copyText(_ rows: [Row], tenants: Int, committedAt: String) -> [ByteBuffer] {
        var seqs = [Int64](repeating: 0, count: tenants)
        var chunks: [ByteBuffer] = []
        var buffer = ByteBuffer()
        for (index, row) in rows.enumerated() {
            let tenant = index % tenants
            seqs[tenant] += 1
            // The frame with this seq: `{"seq":N,"eventId":"N"` and the stored frame's rest.
            var view = row.frame.readableBytesView
            if let comma = view.firstIndex(of: UInt8(ascii: ",")), let next = view[view.index(after: comma)...].firstIndex(of: UInt8(ascii: ",")) {
                view = view[next...]
            }
            let seq = seqs[tenant]
            buffer.writeString(
                "bench-\(tenant)\t\(seq)\t\(Self.escaped(row.msgID))\t\(Self.escaped(row.swarmID))\t\(Self.escaped(row.agentID))\t\(row.kind)\t\(row.severity)\t"
            )
            buffer.writeString("\(row.occurredAt)\t\(committedAt)\t\\\\x")
            Self.writeHex(Array(#"{"seq":\#(seq),"eventId":"\#(seq)""#.utf8), to: &buffer)
            Self.writeHex(view, to: &buffer)
            buffer.writeString("\n")
            if buffer.readableBytes > 1 << 20 {
                chunks.append(buffer)
                buffer = ByteBuffer()
            }
        }
        if buffer.readableBytes > 0 { chunks.append(buffer) }
        return chunks
    }

    /// A text value for COPY: backslash, tab, newline and carriage return escaped.
    static func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "\\": out += "\\\\"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    private static func writeHex(_ bytes: some Sequence<UInt8>, to buffer: inout ByteBuffer) {
        let digits = Array("0123456789abcdef".utf8)
        for byte in bytes {
            buffer.writeInteger(digits[Int(byte >> 4)])
            buffer.writeInteger(digits[Int(byte & 0x0f)])
        }
    }
}
