import EventLog
import Foundation
import HummingbirdTesting
import Logging
import PostgresNIO
import ServiceHarnesses
import TestSupport
import Testing

@Suite("GET /v1/traces/{traceId}: a trace's spans through the index of trace events, tenant-scoped, with its webUrl (live)")
struct TraceSpansTests {
    typealias H = ControlHarness
    typealias JSON = [String: Any]

    static let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let other = "0af7651916cd43dd8448eb211c80319c"

    static func span(_ trace: String, _ span: Int, agent: String = "a1", parent: Int? = nil, name: String = "tool.call") -> JSON {
        var event: JSON = [
            "msgId": "span-\(trace)-\(span)", "swarmId": "s1", "agentId": agent, "kind": "trace", "name": name,
            "spanId": String(format: "%016x", span + 1), "traceId": trace, "durationMs": 12.5, "status": "ok",
        ]
        if let parent { event["parentSpanId"] = String(format: "%016x", parent + 1) }
        return event
    }

    @Test(
        "spans of one trace only, oldest first, across agents, as the stream frames them; another tenant's are not seen; the index answers; bad input 400"
    )
    func spansOfATrace() async throws {
        let harness = try await H()
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            let token = try await harness.token()
            // A trace over two agents, another trace, a log that names the trace in its text, and
            // a trace event whose traceId is not a W3C one.
            var events: [JSON] = [Self.span(Self.trace, 0, name: "agent.run")]
            events += [Self.span(Self.other, 0), Self.span(Self.trace, 1, agent: "a2", parent: 0)]
            events.append([
                "msgId": "log-1", "swarmId": "s1", "agentId": "a1", "kind": "log", "level": "info",
                "message": #"{"traceId":"\#(Self.trace)"}"#,
            ])
            events.append(Self.span(Self.trace, 2, parent: 0, name: #"quoted "traceId":"\#(Self.other)""#))
            events.append(Self.span("not-a-w3c-trace", 3))
            try await harness.post(ingest, key: key, events)
            // The same trace id in another tenant.
            let otherTenant = "other-" + harness.tenant
            try await harness.post(ingest, key: try await harness.createKey(ingest, tenant: otherTenant), [Self.span(Self.trace, 9)])

            let (status, answer) = try await H.call(control, .get, "/v1/traces/\(Self.trace)", token: token)
            #expect(status == .ok, "\(answer)")
            let spans = answer["spans"] as? [JSON] ?? []
            #expect(spans.map { $0["spanId"] as? String } == ["0000000000000001", "0000000000000002", "0000000000000003"], "\(answer)")
            #expect(spans.map { $0["agentId"] as? String } == ["a1", "a2", "a1"])
            #expect(spans.allSatisfy { $0["type"] as? String == "traceEvent" && $0["seq"] != nil })
            #expect(answer["truncated"] as? Bool == false && answer["traceId"] as? String == Self.trace)
            #expect((answer["webUrl"] as? String)?.hasSuffix("/traces/\(Self.trace)") == true)
            // The name that quotes another trace id (escaped inside its string) does not count for it.
            let (_, second) = try await H.call(control, .get, "/v1/traces/\(Self.other)", token: token)
            #expect((second["spans"] as? [JSON])?.map { $0["spanId"] as? String } == ["0000000000000001"], "\(second)")
            let (_, limited) = try await H.call(control, .get, "/v1/traces/\(Self.trace)?limit=2", token: token)
            #expect((limited["spans"] as? [JSON])?.count == 2 && limited["truncated"] as? Bool == true)
            let (_, theirs) = try await H.call(control, .get, "/v1/traces/\(Self.trace)", token: try await harness.token(tenant: otherTenant))
            #expect((theirs["spans"] as? [JSON])?.map { $0["spanId"] as? String } == ["000000000000000a"], "\(theirs)")

            let (unknown, envelope) = try await H.call(control, .get, "/v1/traces/\(String(repeating: "e", count: 32))", token: token)
            #expect(unknown == .notFound && envelope.errorCode == "NotFound")
            for bad in ["4BF92F3577B34DA6A3CE929D0E0E4736", "not-a-w3c-trace", String(repeating: "a", count: 33), "x"] {
                let (refused, _) = try await H.call(control, .get, "/v1/traces/\(bad)", token: token)
                #expect(refused == .badRequest, "\(bad): \(refused)")
            }
            for query in ["limit=0", "limit=1001"] {
                #expect(try await H.call(control, .get, "/v1/traces/\(Self.trace)?\(query)", token: token).0 == .badRequest)
            }
            #expect(try await H.call(control, .get, "/v1/traces/\(Self.trace)", token: try await harness.token(scopes: [.admin])).0 == .forbidden)

            // The reader's statement is answered from events_trace (migration 9), not a scan.
            let plan = try await harness.live.withDatabase { client in
                try await client.withConnection { connection in
                    try await connection.query("SET enable_seqscan = off", logger: Logger(label: "test"))
                    var lines: [String] = []
                    let rows = try await connection.query(
                        """
                        EXPLAIN SELECT seq FROM \(unescaped: harness.ingestSchema).events
                        WHERE tenant_id = \(harness.tenant) AND kind = 1 AND \(unescaped: EventLogReader.traceIDExpression) = \(Self.trace)
                        """,
                        logger: Logger(label: "test")
                    )
                    for try await line in rows.decode(String.self) { lines.append(line) }
                    return lines.joined(separator: "\n")
                }
            }
            #expect(plan.contains("Index") && !plan.contains("Seq Scan"), "\(plan)")
        }
    }
}
