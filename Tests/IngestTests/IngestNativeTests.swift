import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import Testing

@testable import Ingest

@Suite("Ingest native batches (live NATS + Postgres)")
struct IngestNativeTests {
    @Test(
        "a batch is committed with contiguous seqs and published as rendered frames, in seq order: one bus message for the run, or one per event without bus batches",
        arguments: [true, false]
    )
    func acceptAndPublish(busBatches: Bool) async throws {
        let harness = try await IngestHarness(overrides: ["INGEST_BUS_BATCHES": "\(busBatches)"])
        let nats = try await NATSConnection.connect(NATSConfiguration(servers: [try harness.environment["NATS_URL"]!], name: "observer"))
        let subjects = try Subjects(prefix: harness.prefix)
        let feed = try await nats.subscribe(to: subjects.events(tenant: harness.tenant))
        try await nats.flush()
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            let events: [[String: Any]] = [
                logEvent("m1", message: "first \"quoted\"\nline"),
                [
                    "msgId": "m2", "swarmId": "s1", "agentId": "a2", "kind": "tool_call", "tool": "bash", "ok": false, "latencyMs": 12.5,
                    "error": "exit 1",
                ],
                [
                    "msgId": "m3", "swarmId": "s2", "agentId": "a1", "kind": "usage", "model": "claude", "inputTokens": 100, "outputTokens": 20,
                    "costUsd": 0.0031,
                ],
            ]
            let (status, answer) = try await harness.post(client, key: key, events: events)
            // (Refused, nothing is published: the wait for the feed below would never end.)
            try #require(status == .ok)
            #expect(answer?.accepted == 3)
            #expect(answer?.results.map(\.seq) == [1, 2, 3])

            var iterator = feed.makeAsyncIterator()
            var envelopes: [BusEventEnvelope] = []
            var messages = 0
            while envelopes.count < 3 {
                let message = try #require(await iterator.next())
                messages += 1
                envelopes += try BusEventBatch.envelopes(in: message.payload, subject: message.subject, subjects: subjects)
                if busBatches {
                    #expect(message.subject == subjects.eventBatch(tenant: harness.tenant))
                } else {
                    let parsed = try #require(subjects.parseEvent(message.subject))
                    #expect(parsed.tenant == harness.tenant)
                }
            }
            #expect(messages == (busBatches ? 1 : 3))
            #expect(envelopes.allSatisfy { $0.tenantID == harness.tenant })
            #expect(envelopes.map(\.seq) == [1, 2, 3])
            #expect(envelopes[1].kind == .toolCall)
            #expect(envelopes[1].severity == .error)
            let frame = try #require(try JSONSerialization.jsonObject(with: envelopes[0].frame) as? [String: Any])
            #expect(frame["type"] as? String == "log")
            #expect(frame["seq"] as? Int == 1)
            #expect(frame["message"] as? String == "first \"quoted\"\nline")
            let tool = try #require(try JSONSerialization.jsonObject(with: envelopes[1].frame) as? [String: Any])
            #expect(tool["type"] as? String == "toolCall")
            #expect(tool["ok"] as? Bool == false)
        }
        await nats.drain()
    }

    @Test("duplicates by msgId are reported with the stored seq and stored once")
    func duplicates() async throws {
        let harness = try await IngestHarness()
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            let first = try await harness.post(client, key: key, events: [logEvent("d1"), logEvent("d2")])
            #expect(first.1?.accepted == 2)
            let again = try await harness.post(client, key: key, events: [logEvent("d2"), logEvent("d3"), logEvent("d3")])
            #expect(again.1?.results.map(\.status) == ["duplicate", "accepted", "duplicate"])
            #expect(again.1?.results.map(\.seq) == [2, 3, 3])
            let postgres = PostgresClient(configuration: try PostgresClient.Configuration(url: try harness.environment["POSTGRES_URL"]!))
            let running = Task { await postgres.run() }
            defer { running.cancel() }
            let rows = try await postgres.query("SELECT count(*)::int FROM \(unescaped: harness.schema).events WHERE tenant_id = \(harness.tenant)")
            for try await count in rows.decode(Int.self) { #expect(count == 3) }
        }
    }

    @Test("8 writers × 10k events: seqs contiguous from 1, none missing or repeated; a tailing reader never skips one")
    func concurrentWriters() async throws {
        let harness = try await IngestHarness()
        let writers = 8
        let perWriter = 10_000
        let batch = 500
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            let postgres = PostgresClient(
                configuration: try PostgresClient.Configuration(url: try harness.environment["POSTGRES_URL"]!, maxConnections: 2)
            )
            let running = Task { await postgres.run() }
            defer { running.cancel() }

            // The reader tails by seq while the writers run: it reads `seq > last` in order, and
            // must see each seq exactly once with no gap, ever.
            let done = ManagedFlag()
            let reader = Task { () throws -> (Int64, Bool) in
                var last: Int64 = 0
                var contiguous = true
                while true {
                    let finished = done.isSet
                    let rows = try await postgres.query(
                        "SELECT seq FROM \(unescaped: harness.schema).events WHERE tenant_id = \(harness.tenant) AND seq > \(last) ORDER BY seq LIMIT 5000"
                    )
                    var count = 0
                    for try await seq in rows.decode(Int64.self) {
                        if seq != last + 1 { contiguous = false }
                        last = seq
                        count += 1
                    }
                    if finished && count == 0 { return (last, contiguous) }
                    if count == 0 { try await Task.sleep(for: .milliseconds(5)) }
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for start in stride(from: 0, to: perWriter, by: batch) {
                            let events = (start..<(start + batch)).map { logEvent("w\(writer)-\($0)", agent: "a\(writer)") }
                            // A 503 (a deadline past on a loaded machine) is retried as a client
                            // does: the events are then each accepted or, stored by the refused
                            // attempt, a duplicate. The log below says none is missing or repeated.
                            let (status, answer, _) = try await harness.postRetrying(client, key: key, events: events)
                            #expect(status == .ok)
                            #expect(answer?.results.count == batch)
                            #expect(answer?.results.allSatisfy { $0.status == "accepted" || $0.status == "duplicate" } == true)
                        }
                    }
                }
                try await group.waitForAll()
            }
            done.set()
            let (last, contiguous) = try await reader.value
            #expect(last == Int64(writers * perWriter))
            #expect(contiguous)
            let rows = try await postgres.query(
                "SELECT count(*)::int, count(DISTINCT seq)::int, min(seq)::int, max(seq)::int FROM \(unescaped: harness.schema).events WHERE tenant_id = \(harness.tenant)"
            )
            for try await (count, distinct, low, high) in rows.decode((Int, Int, Int, Int).self) {
                #expect(count == writers * perWriter)
                #expect(distinct == count)
                #expect(low == 1)
                #expect(high == count)
            }
        }
    }

    @Test("bad input gets a clear 4xx in the envelope or a per-item rejection, and the service stays healthy")
    func badInput() async throws {
        let harness = try await IngestHarness(overrides: ["INGEST_MAX_BODY_BYTES": "1048576", "INGEST_MAX_BATCH_EVENTS": "100"])
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            func send(
                _ body: ByteBuffer,
                key: String? = nil,
                contentType: String = "application/json"
            ) async throws -> (HTTPResponse.Status, ErrorEnvelope.Body?) {
                var headers: HTTPFields = [.contentType: contentType]
                if let key { headers[.authorization] = "Bearer \(key)" }
                return try await client.execute(uri: "/v1/ingest/events", method: .post, headers: headers, body: body) { response in
                    (response.status, try? JSONDecoder().decode(ErrorEnvelope.self, from: Data(buffer: response.body)).error)
                }
            }
            let cases: [(String, ByteBuffer, String?, String, HTTPResponse.Status, ErrorCode)] = [
                ("malformed JSON", ByteBuffer(string: "{\"events\": [ {"), key, "application/json", .badRequest, .invalidRequest),
                ("wrong top-level type", ByteBuffer(string: "[1,2,3]"), key, "application/json", .badRequest, .invalidRequest),
                ("events not an array", ByteBuffer(string: #"{"events": "nope"}"#), key, "application/json", .badRequest, .invalidRequest),
                ("no key", ByteBuffer(string: #"{"events": []}"#), nil, "application/json", .unauthorized, .authInvalid),
                (
                    "unknown key", ByteBuffer(string: #"{"events": []}"#), "sdi_0000000000000000_" + String(repeating: "0", count: 64),
                    "application/json", .unauthorized, .authInvalid
                ),
                ("not a key", ByteBuffer(string: #"{"events": []}"#), "hunter2", "application/json", .unauthorized, .authInvalid),
                (
                    "wrong content type", ByteBuffer(string: "a=b"), key, "application/x-www-form-urlencoded", .unsupportedMediaType,
                    .unsupportedMediaType
                ),
                (
                    "10 MB of garbage", ByteBuffer(bytes: (0..<(10 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }), key, "application/json",
                    .contentTooLarge, .payloadTooLarge
                ),
                (
                    "too many events",
                    ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: ["events": (0..<101).map { logEvent("x\($0)") }])), key,
                    "application/json", .contentTooLarge, .payloadTooLarge
                ),
            ]
            for (name, body, key, contentType, status, code) in cases {
                let (answered, envelope) = try await send(body, key: key, contentType: contentType)
                #expect(answered == status, "\(name)")
                #expect(envelope?.code == code, "\(name)")
            }

            // Item-level problems reject the item, not the batch.
            let items: [[String: Any]] = [
                logEvent("ok-1"),
                ["msgId": "bad-kind", "swarmId": "s", "agentId": "a", "kind": "telepathy"],
                ["msgId": 42, "swarmId": "s", "agentId": "a", "kind": "log", "message": "x"],
                ["msgId": "no-message", "swarmId": "s", "agentId": "a", "kind": "log"],
                ["msgId": "huge", "swarmId": "s", "agentId": "a", "kind": "log", "message": String(repeating: "x", count: 100_000)],
                ["msgId": "bad-ts", "swarmId": "s", "agentId": "a", "kind": "log", "message": "x", "ts": -5],
                ["msgId": "bad-attrs", "swarmId": "s", "agentId": "a", "kind": "log", "message": "x", "attrs": [1, 2]],
                ["msgId": "", "swarmId": "s", "agentId": "a", "kind": "log", "message": "x"],
                ["msgId": "nul\u{0}id", "swarmId": "s", "agentId": "a", "kind": "log", "message": "x"],
                logEvent("ok-2"),
            ]
            let (status, answer) = try await harness.post(client, key: key, events: items)
            #expect(status == .ok)
            #expect(answer?.accepted == 2)
            #expect(answer?.rejected == 8)
            #expect(answer?.results.map(\.status) == ["accepted"] + Array(repeating: "rejected", count: 8) + ["accepted"])
            #expect(answer?.results[8].reason == "msgId must not contain control characters")
            #expect(answer?.results[3].msgId == "no-message")
            #expect(answer?.results[2].reason == "events[2].msgId must be a string")
            #expect(answer?.results.allSatisfy { $0.status != "rejected" || !($0.reason ?? "").isEmpty } == true)

            try await client.execute(uri: "/readyz", method: .get) { #expect($0.status == .ok) }
        }
    }

    @Test("keys are per tenant, listed, revoked, and never cross tenants")
    func keys() async throws {
        let harness = try await IngestHarness(overrides: ["INGEST_KEY_CACHE_SECONDS": "0"])
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            #expect(try await harness.post(client, key: key, events: [logEvent("k1")]).0 == .ok)
            let admin = try await harness.adminToken()
            let keyID = String(key.split(separator: "_")[1])

            // Another tenant's admin cannot revoke it.
            let other = try await harness.adminToken(tenant: "someone-else")
            try await client.execute(uri: "/v1/admin/ingest-keys/\(keyID)", method: .delete, headers: [.authorization: "Bearer \(other)"]) {
                #expect($0.status == .notFound)
            }
            try await client.execute(uri: "/v1/admin/ingest-keys", method: .get, headers: [.authorization: "Bearer \(admin)"]) { response in
                #expect(String(buffer: response.body).contains(keyID))
                #expect(!String(buffer: response.body).contains(key))  // the secret is never shown again
            }
            try await client.execute(uri: "/v1/admin/ingest-keys/\(keyID)", method: .delete, headers: [.authorization: "Bearer \(admin)"]) {
                #expect($0.status == .noContent)
            }
            #expect(try await harness.post(client, key: key, events: [logEvent("k2")]).0 == .unauthorized)

            // Without the admin scope, no key management.
            let reader = try await harness.signer.sign(tenant: harness.tenant, subject: "viewer", scopes: [.streamRead])
            try await client.execute(uri: "/v1/admin/ingest-keys", method: .get, headers: [.authorization: "Bearer \(reader)"]) {
                #expect($0.status == .forbidden)
            }
        }
    }
}

final class ManagedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { self.lock.withLock { self.value } }
    func set() { self.lock.withLock { self.value = true } }
}
