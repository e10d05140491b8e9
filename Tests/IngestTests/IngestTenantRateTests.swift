import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import ServiceHarnesses
import TestSupport
import Testing

@testable import Ingest

/// Issue 11: one tenant's flood takes at most its share of ingest's commit throughput.
@Suite("Ingest: each tenant's events per second (live NATS + Postgres)")
struct IngestTenantRateTests {
    /// 100 events/s, 500 at once: a first request of 1500 is admitted whole and leaves the
    /// tenant 1000 in debt, ten seconds of refill (room for a loaded machine's slow requests).
    static let rate = 100
    static let burst = 500
    static let first = 1500

    /// Posts `body` as a native batch with its Content-Length, as any HTTP client sends it.
    static func post(_ client: some TestClientProtocol, key: String, events: [[String: Any]]) async throws -> (HTTPResponse.Status, String?) {
        let body = try JSONSerialization.data(withJSONObject: ["events": events])
        return try await client.execute(
            uri: "/v1/ingest/events",
            method: .post,
            headers: [.authorization: "Bearer \(key)", .contentType: "application/json", .contentLength: String(body.count)],
            body: ByteBuffer(bytes: body)
        ) { response in
            (response.status, response.headers[.retryAfter])
        }
    }

    @Test(
        "a tenant over ingest.tenant-events-per-second gets 429 with Retry-After (large bodies unread, OTLP too), its state events pass at their own rate, another tenant is untouched, and the refill lets it back in"
    )
    func tenantRate() async throws {
        let harness = try await IngestHarness(overrides: [
            "INGEST_TENANT_EVENTS_PER_SECOND": String(Self.rate), "INGEST_TENANT_EVENTS_BURST": String(Self.burst),
            "INGEST_TENANT_STATE_EVENTS_PER_SECOND": "1", "INGEST_TENANT_STATE_EVENTS_BURST": "20",
        ])
        try await harness.application().test(.router) { client in
            let loud = try await harness.createKey(client)
            let quiet = try await harness.createKey(client, tenant: "quiet-\(harness.tenant)")
            @Sendable func batch(_ prefix: String, _ count: Int) -> [[String: Any]] {
                (0..<count).map { logEvent("\(prefix)-\($0)", message: String(repeating: "x", count: 64)) }
            }
            // A request larger than the burst passes whole, and leaves the bucket in debt.
            let first = try await Self.post(client, key: loud, events: batch("a", Self.first))
            #expect(first.0 == .ok)
            // Now over: a large body is refused before it is read, a small one after parsing.
            let asked = ContinuousClock.now
            let large = try await Self.post(client, key: loud, events: batch("b", 500))
            #expect(large.0 == .tooManyRequests)
            // Answered no sooner than the refusal delay: a client asking again at once cannot spin.
            #expect(ContinuousClock.now - asked >= TenantEventRate.refusalDelay)
            #expect(large.1.flatMap { Int($0) }.map { $0 >= 1 } == true)
            let small = try await Self.post(client, key: loud, events: batch("c", 2))
            #expect(small.0 == .tooManyRequests)
            // OTLP counts against the same rate (a small export: refused once parsed).
            let export: [UInt8] = try OTLPPayloads.claudeCodeLogs(nanos: UInt64(Date().timeIntervalSince1970 * 1e9)).serializedBytes()
            let otlp = try await client.execute(
                uri: "/v1/logs",
                method: .post,
                headers: [.authorization: "Bearer \(loud)", .contentType: "application/x-protobuf", .contentLength: String(export.count)],
                body: ByteBuffer(bytes: export)
            ) { $0.status }
            #expect(otlp == .tooManyRequests)
            // The tenant's own agents' state changes (the priority lane) are not held back by
            // its bulk debt, but have a rate of their own: 16 and 16 pass (20 at once, then in
            // debt), the next 16 do not.
            @Sendable func states(_ prefix: String) -> [[String: Any]] {
                (0..<16).map { ["msgId": "\(prefix)-\($0)", "swarmId": "s1", "agentId": "a\($0)", "kind": "state", "state": "paused"] }
            }
            #expect(try await Self.post(client, key: loud, events: states("st1")).0 == .ok)
            #expect(try await Self.post(client, key: loud, events: states("st2")).0 == .ok)
            #expect(try await Self.post(client, key: loud, events: states("st3")).0 == .tooManyRequests)
            // Another tenant has buckets of its own.
            let other = try await Self.post(client, key: quiet, events: batch("q", Self.first))
            #expect(other.0 == .ok)
            #expect(try await Self.post(client, key: quiet, events: states("qs")).0 == .ok)
            // Nothing refused was stored: the loud tenant has its first batch and 32 state events.
            let stored = try await harness.withDatabase { database in
                let rows = try await database.query("SELECT count(*)::int FROM events WHERE tenant_id = \(harness.tenant)")
                var count = 0
                for try await value in rows.decode(Int.self) { count = value }
                return count
            }
            #expect(stored == Self.first + 32)
            // Some ten seconds later the debt is paid back.
            #expect(try await eventually(timeout: .seconds(40)) { try await Self.post(client, key: loud, events: batch("d", 10)).0 == .ok })
        }
    }

    @Test(
        "the rate holds across replicas: one tenant's batches spread over two replicas get the burst and the refill, not twice them"
    )
    func acrossReplicas() async throws {
        // 10 events a second, 100 at once; batches of 20, alternately to each replica.
        let (rate, burst, size) = (10, 100, 20)
        let harness = try await IngestHarness(overrides: [
            "INGEST_TENANT_EVENTS_PER_SECOND": String(rate), "INGEST_TENANT_EVENTS_BURST": String(burst),
        ])
        try await harness.application().test(.live) { first in
            try await harness.application().test(.live) { second in
                let key = try await harness.createKey(first)
                let started = ContinuousClock.now
                var admitted = 0
                var statuses: [Int] = []
                for request in 0..<24 {
                    let events = (0..<size).map { logEvent("r\(request)-\($0)", message: "spread") }
                    let (status, _) =
                        request % 2 == 0
                        ? try await Self.post(first, key: key, events: events) : try await Self.post(second, key: key, events: events)
                    statuses.append(status.code)
                    if status == .ok { admitted += size }
                }
                let elapsed = ContinuousClock.now - started
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                // At most the burst, the refill meanwhile, and one batch's overshoot (plus a
                // token) per replica; each replica on its own would admit the burst each.
                let bound = Double(burst) + Double(rate) * seconds + 2 * Double(size + 1)
                #expect(Double(admitted) <= bound, "admitted \(admitted) in \(elapsed): \(statuses)")
                #expect(admitted >= burst - size, "admitted \(admitted) in \(elapsed): \(statuses)")
                #expect(statuses.contains(429))
                // What was admitted is what was stored.
                let stored = try await harness.withDatabase { database in
                    let rows = try await database.query("SELECT count(*)::int FROM events WHERE tenant_id = \(harness.tenant)")
                    var count = 0
                    for try await value in rows.decode(Int.self) { count = value }
                    return count
                }
                #expect(stored == admitted)
            }
        }
    }
}
