import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import EventLog
@testable import Ingest

/// The benchmark's baseline writes what it read: text COPY's escaping and the `unnest` insert
/// both store each stored row again, byte for byte, whatever its strings hold.
@Suite("Ingest bench's COPY and unnest baselines (live Postgres)")
struct EventLogCopyBaselineTests {
    @Test("text COPY and INSERT … unnest store the same rows ingest stored, awkward strings and all, per transaction")
    func baselinesCopyWhatWasStored() async throws {
        let harness = try await IngestHarness()
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            // Ids COPY's text format must escape (a backslash, as in a backslash-N or -x) or
            // pass as they are (non-ASCII text). Ids cannot hold tabs or line ends, and frames
            // travel as hex: COPY's escaping of those, and of a whole `\N`, is checked below.
            let awkward = ["a\\b", "\\N", "ünï 😀", "\\x41", "\\\\t"]
            let events = awkward.enumerated().map { index, text in
                ["msgId": "m\(index)-\(text)", "swarmId": "s\(text)", "agentId": "a\(text)", "kind": "log", "message": text + "\t\n\r"]
                    as [String: Any]
            }
            #expect(try await harness.post(client, key: key, events: events).1?.accepted == awkward.count)

            try await harness.withDatabase { database in
                /// Each row but its seq, its frame without the seq it opens with.
                func rows(_ table: String, tenant: String) async throws -> [[String]] {
                    let found = try await database.query(
                        """
                        SELECT seq, msg_id, swarm_id, agent_id, kind, severity, occurred_at::text, encode(frame, 'escape')
                        FROM \(unescaped: harness.schema).\(unescaped: table) WHERE tenant_id = \(tenant) ORDER BY seq
                        """
                    )
                    var lines: [[String]] = []
                    for try await (seq, msgID, swarm, agent, kind, severity, occurred, frame) in found.decode(
                        (Int64, String, String, String, Int16, Int16, String, String).self
                    ) {
                        let opening = #"{"seq":\#(seq),"eventId":"\#(seq)""#
                        #expect(frame.hasPrefix(opening))
                        lines.append([msgID, swarm, agent, "\(kind)", "\(severity)", occurred, String(frame.dropFirst(opening.count))])
                    }
                    return lines
                }
                let stored = try await rows("events", tenant: harness.tenant)
                #expect(stored.count == awkward.count)
                // The baseline copies newest first, each transaction's seqs from where the last
                // one ended: the same rows, in reverse order, with seqs from 1.
                for method in EventLogCopyBaseline.InsertMethod.allCases {
                    let runs = try await EventLogCopyBaseline.compareInserts(
                        client: database,
                        schema: harness.schema,
                        sourceTenant: harness.tenant,
                        rows: 100,
                        transactionRows: 3,
                        methods: [method],
                        keepTable: true,
                        logger: Logger(label: "test")
                    )
                    #expect(runs.map(\.method) == [method])
                    let copied = try await rows("bench_copy", tenant: "bench-0")
                    #expect(copied.count == stored.count, "\(method)")
                    #expect(copied == stored.reversed(), "\(method)")
                }
                try await database.query("DROP TABLE \(unescaped: harness.schema).bench_copy")

                // COPY's escaping of the characters ids cannot hold, straight into a text column.
                let texts = ["tab\there", "new\nline", "cr\rhere", "\\", "\\N", "\\.", "ünï 😀", ""]
                let logger = Logger(label: "test")
                try await database.withConnection { connection in
                    try await connection.query("CREATE TEMP TABLE escaped (n int, x text)", logger: logger)
                    try await connection.copyFrom(table: "escaped", logger: logger) { writer in
                        for (index, text) in texts.enumerated() {
                            try await writer.write(ByteBuffer(string: "\(index)\t\(EventLogCopyBaseline.escaped(text))\n"))
                        }
                    }
                    var read: [String] = []
                    for try await text in try await connection.query("SELECT x FROM escaped ORDER BY n", logger: logger).decode(String.self) {
                        read.append(text)
                    }
                    #expect(read == texts)
                }
            }
        }
    }
}
