import Approvals
import Contracts
import Foundation
import HummingbirdTesting
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import StreamFanout
import TestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Health-monitor's replicas share the event partitions through leases (live)")
struct HealthPartitionTests {
    typealias H = HealthHarness
    typealias JSON = [String: Any]

    /// Short leases, so that partitions change hands within seconds.
    static let leaseSeconds = 3

    @Test(
        """
        1, 2 and 3 replicas: every partition leased to and subscribed by exactly one replica, every tenant's incident fired \
        once across the handovers, no subscription to every event; a replica that leaves gives its partitions back, one that vanishes loses them \
        when its leases run out
        """
    )
    func replicasShareThePartitions() async throws {
        let harness = try await H(["HEALTH_LEASE_SECONDS": "\(Self.leaseSeconds)"])
        // Ten tenants, in ten different partitions.
        var tenants: [String] = []
        var partitions: Set<EventPartition> = []
        while tenants.count < 10 {
            let tenant = "tenant-" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)
            if partitions.insert(EventPartition(tenant: tenant)).inserted { tenants.append(tenant) }
        }
        let fixedTenants = tenants
        try await harness.run { ingest, _, health in
            var keys: [String: String] = [:]
            for tenant in fixedTenants { keys[tenant] = try await harness.live.createKey(ingest, tenant: tenant) }
            let fixedKeys = keys
            /// A fatal event of each of `tenants`: each fires `critical_error` for its agent.
            @Sendable func fatal(_ tenants: ArraySlice<String>) async throws {
                for tenant in tenants {
                    try await harness.post(
                        ingest,
                        key: fixedKeys[tenant]!,
                        [["kind": "log", "swarmId": "w", "agentId": "a", "severity": "fatal", "message": "down"]]
                    )
                }
            }
            /// Each of `tenants` has its incident, fired by whichever replica follows it.
            @Sendable func fired(_ tenants: ArraySlice<String>) async throws {
                for tenant in tenants {
                    let token = try await harness.token(tenant: tenant)
                    let incident = try await H.incident(health, token: token, rule: "critical_error", timeout: .seconds(30))
                    #expect(incident != nil, "\(tenant) (partition \(EventPartition(tenant: tenant))): no critical_error incident")
                }
            }

            try await Self.expectShared(harness, replicas: 1)
            try await fatal(fixedTenants[0..<3])
            try await fired(fixedTenants[0..<3])
            try await harness.health { _ in
                try await Self.expectShared(harness, replicas: 2)
                try await fatal(fixedTenants[3..<6])
                try await fired(fixedTenants[3..<6])
                try await harness.health { _ in
                    try await Self.expectShared(harness, replicas: 3)
                    try await fatal(fixedTenants[6..<8])
                    try await fired(fixedTenants[6..<8])
                }
                // The third left and gave its partitions back: two share them again.
                try await Self.expectShared(harness, replicas: 2)
                try await fatal(fixedTenants[8..<10])
                try await fired(fixedTenants[8..<10])
            }
            try await Self.expectShared(harness, replicas: 1)
            // Each tenant's windows were rebuilt by every replica that took its partition: one
            // incident each all the same (a replica that takes a partition takes its firing
            // incidents back).
            let counts = try await harness.live.withDatabase { client in
                var counts: [String: Int] = [:]
                let rows = try await client.query(
                    "SELECT tenant_id, count(*)::int8 FROM \(unescaped: harness.live.serviceSchema)_hm.incidents WHERE rule = 'critical_error' GROUP BY 1",
                    logger: Logger(label: "test")
                )
                for try await (tenant, count) in rows.decode((String, Int64).self) { counts[tenant] = Int(count) }
                return counts
            }
            #expect(counts == Dictionary(uniqueKeysWithValues: fixedTenants.map { ($0, 1) }), "critical_error incidents per tenant: \(counts)")

            // A replica that vanishes without giving its leases back (as if killed): its
            // partitions stay unfollowed until its leases run out, then the live one takes them.
            let ghost = "ghost-" + UUID().uuidString.prefix(8)
            let schema = harness.live.serviceSchema + "_hm"
            let stolen = [EventPartition(tenant: fixedTenants[0]).index, EventPartition(tenant: fixedTenants[1]).index]
            let started = ContinuousClock.now
            try await harness.live.withDatabase { client in
                _ = try await client.query(
                    """
                    WITH r AS (INSERT INTO \(unescaped: schema).replicas VALUES (\(ghost), now() + interval '3 seconds'))
                    UPDATE \(unescaped: schema).partition_leases SET holder = \(ghost), until = now() + interval '3 seconds'
                    WHERE partition = ANY(\(stolen)::int[])
                    """,
                    logger: Logger(label: "test")
                ).collect()
            }
            try await Self.expectShared(harness, replicas: 1, timeout: .seconds(30))
            let back = ContinuousClock.now - started
            // Within the ghost's lease and the live replica's next round after it, with slack.
            #expect(back < .seconds(Self.leaseSeconds * 4), "the vanished replica's partitions came back after \(back)")
            print("health partitions: a vanished replica's partitions followed again after \(back)")

            // The other services that hear events, beside these: stream-fanout subscribes per
            // tenant with connections (it has none here), approvals to ACP messages by kind.
            // None to every event.
            try await harness.live.application(StreamFanoutService.self).test(.router) { _ in
                try await harness.live.application(ApprovalsService.self).test(.router) { _ in
                    let acp = try Subjects(prefix: harness.live.prefix).allACPEvents
                    let heard = await eventually {
                        ((try? await Self.subscriptions(prefix: harness.live.prefix).values.flatMap { $0 }) ?? []).contains(acp)
                    }
                    #expect(heard, "approvals' subscription to ACP messages")
                    try await Self.expectShared(harness, replicas: 1)
                }
            }
        }
    }

    /// Waits until `replicas` replicas hold every partition between them, each partition held
    /// by one lease and subscribed by one connection, and no connection of this test holds a
    /// subscription to every event.
    static func expectShared(_ harness: H, replicas: Int, timeout: Duration = .seconds(30)) async throws {
        var last = ""
        let shared = try await eventually(timeout: timeout) {
            let holders = try await harness.live.withDatabase { client in
                var holders: [Int: String] = [:]
                let rows = try await client.query(
                    "SELECT partition, holder FROM \(unescaped: harness.live.serviceSchema)_hm.partition_leases WHERE until > now()",
                    logger: Logger(label: "test")
                )
                for try await (partition, holder) in rows.decode((Int32, String).self) { holders[Int(partition)] = holder }
                return holders
            }
            let subscriptions = try await Self.eventSubscriptions(prefix: harness.live.prefix)
            let partitionSubjects = subscriptions.values.flatMap { $0 }
            let subjects = try Subjects(prefix: harness.live.prefix)
            let expected = EventPartition.all.map { subjects.events(partition: $0) }
            last = "leases \(holders.count) over \(Set(holders.values).count) replicas; event subscriptions by connection: \(subscriptions)"
            return holders.count == EventPartition.count && Set(holders.values).count == replicas
                && partitionSubjects.sorted() == expected.sorted()
                && subscriptions.values.filter { $0.contains { $0.hasPrefix(harness.live.prefix + ".ev.") } }.count == replicas
        }
        #expect(shared, "\(replicas) replicas do not share the partitions: \(last)")
        // Whatever else holds a subscription here, none is to every event.
        let all = try await Self.subscriptions(prefix: harness.live.prefix).values.flatMap { $0 }
        for firehose in [".ev.>", ".ev.*.>", ".>"] {
            #expect(!all.contains(harness.live.prefix + firehose), "a subscription to \(harness.live.prefix + firehose): \(all)")
        }
    }

    /// The subscriptions to event partitions (`<prefix>.ev.<n>.>`) by connection id.
    static func eventSubscriptions(prefix: String) async throws -> [Int: [String]] {
        try await Self.subscriptions(prefix: prefix).mapValues { subjects in
            subjects.filter { subject in
                guard subject.hasPrefix(prefix + ".ev."), subject.hasSuffix(".>") else { return false }
                let token = subject.dropFirst(prefix.count + 4).dropLast(2)
                return Int(token).flatMap(EventPartition.init) != nil
            }
        }.filter { !$0.value.isEmpty }
    }

    /// Every subscription under `prefix` at the NATS monitor (`/connz?subs=1`), by connection id.
    static func subscriptions(prefix: String) async throws -> [Int: [String]] {
        struct Connections: Decodable {
            struct Connection: Decodable {
                var cid: Int
                var subscriptions_list: [String]?
            }
            var connections: [Connection]?
        }
        let monitor = try #require(ProcessInfo.processInfo.environment["SWARMDECK_TEST_NATS_MONITOR_URL"])
        let url = try #require(URL(string: "\(monitor)/connz?subs=1&limit=100000"))
        let (data, _) = try await URLSession.shared.data(from: url)
        var byConnection: [Int: [String]] = [:]
        for connection in try JSONDecoder().decode(Connections.self, from: data).connections ?? [] {
            let mine = (connection.subscriptions_list ?? []).filter { $0.hasPrefix(prefix + ".") }
            if !mine.isEmpty { byConnection[connection.cid] = mine }
        }
        return byConnection
    }
}
