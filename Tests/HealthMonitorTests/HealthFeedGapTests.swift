import Contracts
import EventLog
import Foundation
import HummingbirdTesting
import Logging
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import Ingest

@Suite("Health-monitor's live feed when the log cannot be read for a gap (live NATS and Postgres)")
struct HealthFeedGapTests {
    typealias H = HealthHarness

    @Test("a gap the log cannot fill is read once it can, within seconds and without another message: a quiet tenant's last events are applied")
    func gapReadAgain() async throws {
        // No swarm metrics: they are events of the tenant, and the tenant must stay quiet.
        let harness = try await H(["HEALTH_METRIC_SECONDS": "3600"])
        try await harness.run { ingest, _, health in
            let key = try await harness.live.createKey(ingest)
            let token = try await harness.token()
            // Seq 1, through ingest: health follows the tenant.
            try await harness.post(
                ingest,
                key: key,
                [["kind": "usage", "swarmId": "w", "agentId": "a", "inputTokens": 1000, "outputTokens": 1, "attrs": ["session.id": "first"]]]
            )
            #expect(await eventually(timeout: .seconds(10)) { (try? await H.get(health, "/v1/context-health/first", token: token).0) == .ok })
            try await harness.live.withDatabase { database in
                // Seqs 2 and 3 committed to the log, and only 3 published: health meets a gap.
                let usage = { (id: String) in
                    PreparedEvent(
                        msgID: id,
                        swarmID: "w",
                        agentID: "a",
                        kind: .usage,
                        severity: .info,
                        occurredAtMilliseconds: Date().milliseconds,
                        frameTail: Array(#","kind":"usage","inputTokens":1000,"outputTokens":1,"attrs":{"session.id":"quiet"}}"#.utf8)
                    )
                }
                let appender = EventLogAppender(client: database, logger: Logger(label: "test"))
                let (_, committed) = try await appender.append(tenant: harness.tenant, events: [usage("m2"), usage("m3")], committedAt: Date())
                // Nothing else of the tenant's is in the log: no other message can fill the gap.
                #expect(committed.map(\.seq) == [2, 3])
                // The log cannot be read while its table is away.
                try await database.query("ALTER TABLE events RENAME TO events_away")
                let nats = try await harness.live.connectNATS()
                let publisher = EventPublisher(
                    connection: nats,
                    subjects: try Subjects(prefix: harness.live.prefix),
                    batches: true,
                    logger: Logger(label: "test")
                )
                publisher.publish(tenant: harness.tenant, events: Array(committed.suffix(1)), committedAtNanoseconds: Date().milliseconds * 1_000_000)
                try await nats.flush()
                await nats.close()
                try await Task.sleep(for: .seconds(2))
                #expect(
                    try await H.get(health, "/v1/context-health/quiet", token: token).0 == .notFound,
                    "applied although the gap could not be read"
                )
                try await database.query("ALTER TABLE events_away RENAME TO events")
            }
            // No further message: the catch-up reads seqs 2 and 3.
            #expect(
                await eventually(timeout: .seconds(10)) { (try? await H.get(health, "/v1/context-health/quiet", token: token).0) == .ok },
                "the tenant's events past the gap were never applied"
            )
        }
    }
}
