import ServiceKit
import Testing

@testable import HealthMonitor

@Suite("Health-monitor's settings: the replicas split the tenants between them")
struct HealthSettingsTests {
    /// The settings of replica `index` of `replicas`, every other key at its default.
    static func settings(replicas: Int, index: Int) async throws -> HealthSettings {
        try await HealthSettings(
            reader: ServiceConfiguration.reader(
                arguments: ["health-monitor"],
                environment: ["HEALTH_REPLICAS": "\(replicas)", "HEALTH_REPLICA_INDEX": "\(index)"]
            )
        )
    }

    /// A thousand tenant ids like the live harness's ("tenant-" and a 64-bit number in base 36), from a fixed seed
    /// (SplitMix64), so a failure reproduces.
    static let tenants: [String] = {
        var state: UInt64 = 0x5EED
        return (0..<1000).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            return "tenant-" + String(mixed ^ (mixed >> 31), radix: 36)
        }
    }()

    @Test("with 2 or 3 replicas each of a thousand tenants is followed by exactly one replica, and each replica follows about its share")
    func replicasSplitTheTenants() async throws {
        #expect(Set(Self.tenants).count == 1000)
        for replicas in [2, 3] {
            var settings: [HealthSettings] = []
            for index in 0..<replicas { settings.append(try await Self.settings(replicas: replicas, index: index)) }
            #expect(settings.map(\.replicaIndex) == Array(0..<replicas))
            var followed = Array(repeating: 0, count: replicas)
            for tenant in Self.tenants {
                let owners = settings.filter { $0.owns(tenant) }.map(\.replicaIndex)
                #expect(owners.count == 1, "\(tenant) with \(replicas) replicas is followed by \(owners)")
                for owner in owners { followed[owner] += 1 }
            }
            #expect(followed.reduce(0, +) == Self.tenants.count)
            // Within 15% of an even share (for 2 replicas 425…575 of 1000; for 3, 284…383).
            let share = Double(Self.tenants.count) / Double(replicas)
            for (index, count) in followed.enumerated() {
                #expect(abs(Double(count) - share) <= share * 0.15, "replica \(index) of \(replicas) follows \(count) tenants: \(followed)")
            }
        }
    }

    @Test("ids that differ only in same-parity characters still spread over 2 and 4 replicas (the hash is mixed before the remainder)")
    func evenDigitsSpread() async throws {
        // tenant-N with every digit even: plain FNV-1a modulo 2 sent all of them to replica 0.
        let ids = (0..<5000).map { "tenant-" + String($0) }.filter { $0.dropFirst(7).allSatisfy { "02468".contains($0) } }
        #expect(ids.count > 100)
        for replicas in [2, 4] {
            var followed = Array(repeating: 0, count: replicas)
            for index in 0..<replicas {
                let settings = try await Self.settings(replicas: replicas, index: index)
                followed[index] = ids.filter { settings.owns($0) }.count
            }
            let share = Double(ids.count) / Double(replicas)
            #expect(followed.allSatisfy { abs(Double($0) - share) <= share * 0.3 }, "\(followed) of \(ids.count) over \(replicas)")
        }
    }

    @Test("a single replica follows every tenant; a replica index at or past the replica count is refused")
    func singleReplicaAndIndexBounds() async throws {
        let single = try await Self.settings(replicas: 1, index: 0)
        #expect(Self.tenants.allSatisfy { single.owns($0) })
        let error = await #expect(throws: ServiceKitError.self) { try await Self.settings(replicas: 2, index: 2) }
        #expect(error?.code == .configuration)
    }
}
