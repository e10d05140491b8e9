import EventLog
import Foundation

/// The fleet as control-api answers it: every agent of a tenant with its last-known state and
/// its events and errors of the last hour, read from the table ingest's appends keep in their
/// transactions (``EventLogReader/fleet(tenant:swarms:agents:limit:)``), so any replica answers
/// for any tenant and none hears every event. A tenant's lists hold its `maxAgentsPerTenant`
/// most recently seen agents.
struct FleetIndex: Sendable {
    let eventLog: EventLogReader
    let maxAgentsPerTenant: Int

    /// One agent of `tenant`, or nil. Its id may be spelled otherwise than the agent's own, in
    /// Unicode NFC or NFD (an agent is found under its canonical equivalents).
    func agent(tenant: String, id: String) async throws -> FleetAgent? {
        try await self.eventLog.fleet(tenant: tenant, agents: Self.spellings(id), limit: 1).first
    }

    /// The agents of `tenant`, the most recently seen first.
    func agents(tenant: String) async throws -> [FleetAgent] {
        try await self.eventLog.fleet(tenant: tenant, limit: self.maxAgentsPerTenant)
    }

    /// The agents of one swarm of `tenant` (spelled as `swarm`, or its NFC or NFD), the most
    /// recently seen first.
    func agents(tenant: String, swarm: String) async throws -> [FleetAgent] {
        try await self.eventLog.fleet(tenant: tenant, swarms: Self.spellings(swarm), limit: self.maxAgentsPerTenant)
    }

    /// `id` as given, in NFC and in NFD, each once (as bytes: Swift's `==`, and so a `Set`,
    /// holds two spellings equal).
    static func spellings(_ id: String) -> [String] {
        var spellings: [String] = []
        for spelling in [id, id.precomposedStringWithCanonicalMapping, id.decomposedStringWithCanonicalMapping]
        where !spellings.contains(where: { $0.utf8.elementsEqual(spelling.utf8) }) {
            spellings.append(spelling)
        }
        return spellings
    }
}

extension FleetAgent {
    /// The order lists of agents take: the most recently seen first, then by id.
    static func mostRecentFirst(_ a: FleetAgent, _ b: FleetAgent) -> Bool {
        (a.lastSeenAt, b.agentID) > (b.lastSeenAt, a.agentID)
    }
}
