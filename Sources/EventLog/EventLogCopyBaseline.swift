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
        let (stored, now) = try await Self.storedRows(client: client, schema: schema, sourceTenant: sourceTenant, rows: rows, logger: logger)
        guard !stored.isEmpty else { return [] }
        var runs: [Run] = []
        for count in tenants {
            let text = Self.copyText(stored, tenants: max(1, count), committedAt: now)
            let elapsed = try await Self.withTable(client: client, schema: schema, logger: logger) { connection in
                let start = ContinuousClock.now
                try await connection.copyFrom(table: "bench_copy", logger: logger) { writer in
                    for chunk in text { try await writer.write(chunk) }
                }
                return ContinuousClock.now - start
            }
            runs.append(Run(rows: stored.count, tenants: max(1, count), rowsPerSecond: Double(stored.count) / elapsed.secondsDouble))
        }
        return runs
    }

    /// How ingest could insert a transaction's rows.
    public enum InsertMethod: String, Sendable, CaseIterable {
        /// `INSERT … SELECT … FROM unnest(…)` with each column bound as an array (binary), as
        /// ingest's `append_events` inserts.
        case unnest
        /// `COPY … FROM STDIN` in text format, each value escaped and each frame as hex.
        case textCopy = "text COPY"
    }

    /// What one insert method took.
    public struct InsertRun: Sendable {
        public var method: InsertMethod
        public var rows: Int
        /// Rows per transaction.
        public var transactionRows: Int
        /// Rows per second, making each transaction's data (binding or COPY text) included.
        public var rowsPerSecond: Double
        /// Of that time, the seconds spent making the data (on this side, not Postgres's).
        public var makingSeconds: Double
        public var seconds: Double
    }

    /// Inserts the last `rows` rows of `sourceTenant` into `<schema>.bench_copy` (made like the
    /// event log) with each method of `methods` in turn (a method may come more than once: pass
    /// them in ABBA order so that neither always meets the fresher table), one transaction per
    /// `transactionRows` rows as ingest commits them, one tenant. Each run's time includes making
    /// its data (binding the arrays, or escaping the COPY text), which ingest would do per
    /// transaction, and says how much of it that was. With `keepTable`, the table is left
    /// holding the last run's rows (for tests).
    public static func compareInserts(
        client: PostgresClient,
        schema: String,
        sourceTenant: String,
        rows: Int,
        transactionRows: Int,
        methods: [InsertMethod] = [.unnest, .textCopy, .textCopy, .unnest],
        keepTable: Bool = false,
        logger: Logger
    ) async throws -> [InsertRun] {
        let (stored, now) = try await Self.storedRows(client: client, schema: schema, sourceTenant: sourceTenant, rows: rows, logger: logger)
        guard !stored.isEmpty, transactionRows > 0 else { return [] }
        return try await Self.withTable(client: client, schema: schema, keep: keepTable, logger: logger) { connection in
            var runs: [InsertRun] = []
            for method in methods {
                try await connection.query("TRUNCATE bench_copy", logger: logger)
                let clock = ContinuousClock()
                let start = clock.now
                var making = Duration.zero
                var first = 0
                while first < stored.count {
                    let chunk = stored[first..<min(first + transactionRows, stored.count)]
                    // Rolled back on failure: the connection goes back to the pool outside a failed transaction.
                    making += try await connection.withTransaction(logger: logger) { connection in
                        switch method {
                        case .unnest:
                            var insert: PostgresQuery? = nil
                            let making = clock.measure { insert = Self.unnestInsert(chunk, firstSeq: Int64(first + 1)) }
                            try await connection.query(insert!, logger: logger)
                            return making
                        case .textCopy:
                            var text: [ByteBuffer] = []
                            let making = clock.measure { text = Self.copyText(chunk, tenants: 1, committedAt: now, firstSeq: Int64(first + 1)) }
                            try await connection.copyFrom(table: "bench_copy", logger: logger) { writer in
                                for part in text { try await writer.write(part) }
                            }
                            return making
                        }
                    }
                    first += chunk.count
                }
                let elapsed = (clock.now - start).secondsDouble
                runs.append(
                    InsertRun(
                        method: method,
                        rows: stored.count,
                        transactionRows: transactionRows,
                        rowsPerSecond: Double(stored.count) / elapsed,
                        makingSeconds: making.secondsDouble,
                        seconds: elapsed
                    )
                )
            }
            return runs
        }
    }

    /// The last `rows` rows of `sourceTenant`, newest first, and Postgres's `now()` as text.
    private static func storedRows(
        client: PostgresClient,
        schema: String,
        sourceTenant: String,
        rows: Int,
        logger: Logger
    ) async throws -> (rows: [Row], now: String) {
        let source = try await client.query(
            """
            SELECT msg_id, swarm_id, agent_id, kind, severity, occurred_at::text,
                   (extract(epoch FROM occurred_at) * 1000)::int8, frame, now()::text
            FROM \(unescaped: schema).events WHERE tenant_id = \(sourceTenant) ORDER BY seq DESC LIMIT \(rows)
            """,
            logger: logger
        )
        // Timestamps as Postgres writes them, which COPY reads back.
        var stored: [Row] = []
        var now = ""
        for try await (msgID, swarm, agent, kind, severity, occurred, occurredMilliseconds, frame, committed) in source.decode(
            (String, String, String, Int16, Int16, String, Int64, ByteBuffer, String).self
        ) {
            stored.append(
                Row(
                    msgID: msgID,
                    swarmID: swarm,
                    agentID: agent,
                    kind: kind,
                    severity: severity,
                    occurredAt: occurred,
                    occurredAtMilliseconds: occurredMilliseconds,
                    frame: frame
                )
            )
            now = committed
        }
        return (stored, now)
    }

    /// Runs `body` on a connection whose `search_path` is `schema`, with `bench_copy` made
    /// like the event log (today's partition made) and dropped after unless `keep`.
    private static func withTable<T: Sendable>(
        client: PostgresClient,
        schema: String,
        keep: Bool = false,
        logger: Logger,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let table = "\(schema).bench_copy"
        try await client.query("DROP TABLE IF EXISTS \(unescaped: table)", logger: logger)
        try await client.query(
            "CREATE TABLE \(unescaped: table) (LIKE \(unescaped: schema).events INCLUDING ALL) PARTITION BY RANGE (committed_at)",
            logger: logger
        )
        let result: T
        do {
            result = try await client.withConnection { connection in
                // copyFrom quotes the table name as one identifier: name it via search_path.
                try await connection.query("SET search_path TO \(unescaped: schema)", logger: logger)
                // Yesterday's, today's and tomorrow's partitions: the COPY's commit time was read
                // before, and a run may cross midnight (UTC).
                try await connection.perform(
                    """
                    SELECT create_day_partition('bench_copy', (now() AT TIME ZONE 'UTC')::date + d)
                    FROM generate_series(-1, 1) AS d
                    """,
                    logger: logger
                )
                return try await body(connection)
            }
        } catch {
            _ = try? await client.query("DROP TABLE IF EXISTS \(unescaped: table)", logger: logger)
            throw error
        }
        if !keep { try await client.query("DROP TABLE \(unescaped: table)", logger: logger) }
        return result
    }

    /// `rows` as one `INSERT … unnest` of bound arrays, seqs from `firstSeq`, tenant `bench-0`.
    static func unnestInsert(_ rows: ArraySlice<Row>, firstSeq: Int64) -> PostgresQuery {
        let seqs = (0..<Int64(rows.count)).map { firstSeq + $0 }
        let frames = zip(rows, seqs).map { row, seq in
            var frame = ByteBuffer(bytes: Self.frameOpening(seq: seq))
            frame.writeBytes(Self.frameRest(row.frame))
            return frame
        }
        return """
            INSERT INTO bench_copy (tenant_id, seq, msg_id, swarm_id, agent_id, kind, severity, occurred_at, committed_at, frame)
            SELECT 'bench-0', u.seq, u.msg_id, u.swarm_id, u.agent_id, u.kind, u.severity,
                   to_timestamp(u.occurred_ms / 1000.0), now(), u.frame
            FROM unnest(\(seqs), \(rows.map(\.msgID)), \(rows.map(\.swarmID)), \(rows.map(\.agentID)), \(rows.map(\.kind)),
                        \(rows.map(\.severity)), \(rows.map(\.occurredAtMilliseconds)), \(frames))
                 AS u(seq, msg_id, swarm_id, agent_id, kind, severity, occurred_ms, frame)
            """
    }

    /// A stored frame without its opening `{"seq":N,"eventId":"N"`.
    private static func frameRest(_ frame: ByteBuffer) -> ByteBufferView.SubSequence {
        var view = frame.readableBytesView[...]
        if let comma = view.firstIndex(of: UInt8(ascii: ",")), let next = view[view.index(after: comma)...].firstIndex(of: UInt8(ascii: ",")) {
            view = view[next...]
        }
        return view
    }

    private static func frameOpening(seq: Int64) -> [UInt8] {
        var opening: [UInt8] = []
        PreparedEvent.writeFrameOpening(seq: seq, to: &opening)
        return opening
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
        var occurredAtMilliseconds: Int64
        var frame: ByteBuffer
    }

    /// COPY's text format of `rows`, in chunks of about a MiB: dealt to `tenants` tenants,
    /// each with seqs from `firstSeq`, committed at `committedAt` (Postgres's text of a
    /// timestamp).
    static func copyText(_ rows: some Collection<Row>, tenants: Int, committedAt: String, firstSeq: Int64 = 1) -> [ByteBuffer] {
        var seqs = [Int64](repeating: firstSeq - 1, count: tenants)
        var chunks: [ByteBuffer] = []
        var buffer = ByteBuffer()
        for (index, row) in rows.enumerated() {
            let tenant = index % tenants
            seqs[tenant] += 1
            let seq = seqs[tenant]
            buffer.writeString(
                "bench-\(tenant)\t\(seq)\t\(Self.escaped(row.msgID))\t\(Self.escaped(row.swarmID))\t\(Self.escaped(row.agentID))\t\(row.kind)\t\(row.severity)\t"
            )
            // The frame with this seq, as bytea's hex input (its backslash escaped for COPY).
            buffer.writeString("\(row.occurredAt)\t\(committedAt)\t\\\\x")
            Self.writeHex(Self.frameOpening(seq: seq), to: &buffer)
            Self.writeHex(Self.frameRest(row.frame), to: &buffer)
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
        // Most ids hold none of the four.
        guard
            text.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }
            )
        else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
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

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// `bytes` as lowercase hex, written in one go.
    private static func writeHex(_ bytes: some Collection<UInt8>, to buffer: inout ByteBuffer) {
        let digits = Self.hexDigits
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 2 * bytes.count) { out in
            var index = 0
            for byte in bytes {
                out[index] = digits[Int(byte >> 4)]
                out[index + 1] = digits[Int(byte & 0x0f)]
                index += 2
            }
            return index
        }
    }
}
