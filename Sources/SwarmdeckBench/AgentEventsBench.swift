import ArgumentParser
import AsyncHTTPClient
import EventLog
import Foundation
import Logging
import NIOCore
import PostgresNIO
import ServiceKit

/// `swarmdeck-bench agent-events`: `GET /v1/agents/{agentId}/events` (seed 000 §12.3's last 50
/// events) on a tenant log of a million events. Fills a tenant of its own with SQL (the read is
/// measured, not the write), then times requests through the edge for agents spread over the whole
/// log and for one whose only event is the newest, beside the same read with the log's indexes
/// refused to the planner (a scan of the tenant's log), in one run.
struct AgentEventsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent-events",
        abstract: "An agent's newest events on a tenant log of a million events, through the index and, side by side, by a scan."
    )

    @OptionGroup var stack: StackBenchOptions

    @Option(help: "Postgres URL of ingest's database, as its owner (default: $SWARMDECK_DATABASE_URL).")
    var databaseURL: String?

    @Option(help: "Ingest's schema.")
    var schema = "ingest"

    @Option(help: "Events in the bench tenant's log.")
    var events = 1_000_000

    @Option(help: "Agents the events are dealt to.")
    var agents = 1000

    @Option(help: "Requests per phase.")
    var requests = 500

    @Option(help: "Reads timed with the indexes refused (each scans the tenant's log).")
    var scans = 5

    @Flag(help: "Keep the bench tenant's log afterwards.")
    var keep = false

    func run() async throws {
        guard let databaseURL = self.databaseURL ?? ProcessInfo.processInfo.environment["SWARMDECK_DATABASE_URL"] else {
            throw ValidationError("no database URL: pass --database-url or source .swarmdeck/local.env")
        }
        guard self.schema.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { throw ValidationError("bad schema name") }
        guard self.events > 0, self.agents > 0, self.requests > 0 else { throw ValidationError("events, agents and requests must be positive") }
        let tenant = "bench-events-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let logger = Logger(label: "agent-events-bench")
        var indexed = try PostgresClient.Configuration(url: databaseURL, maxConnections: 2)
        indexed.options.additionalStartupParameters = [("statement_timeout", "0")]
        var scanning = indexed
        scanning.options.additionalStartupParameters += [("enable_indexscan", "off"), ("enable_bitmapscan", "off"), ("enable_indexonlyscan", "off")]
        let client = PostgresClient(configuration: indexed)
        let scanClient = PostgresClient(configuration: scanning)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            group.addTask { await scanClient.run() }
            defer { group.cancelAll() }
            try await self.measure(tenant: tenant, client: client, scanClient: scanClient, logger: logger)
        }
    }

    private func measure(tenant: String, client: PostgresClient, scanClient: PostgresClient, logger: Logger) async throws {
        print(
            "agent-events bench: tenant \(tenant), \(self.events) events of \(self.agents) agents, \(self.requests) requests per phase, \(self.stack.url)"
        )
        let filling = ContinuousClock.now
        try await EventLogAgentFill.fill(
            client: client,
            schema: self.schema,
            tenant: tenant,
            events: self.events,
            agents: self.agents,
            logger: logger
        )
        print(String(format: "log filled in %.1f s (one INSERT … SELECT, the log's indexes included)", (ContinuousClock.now - filling).secondsDouble))
        do {
            try await self.time(tenant: tenant, client: client, scanClient: scanClient, logger: logger)
        } catch {
            if !self.keep { try? await EventLogAgentFill.drop(client: client, schema: self.schema, tenant: tenant, logger: logger) }
            throw error
        }
        if !self.keep {
            try await EventLogAgentFill.drop(client: client, schema: self.schema, tenant: tenant, logger: logger)
            print("the bench tenant's log removed")
        }
    }

    private func time(tenant: String, client: PostgresClient, scanClient: PostgresClient, logger: Logger) async throws {
        let token = try await self.stack.signer().sign(tenant: tenant, subject: "bench-reader", scopes: [.streamRead])

        var spread: [Duration] = []
        for _ in 0..<self.requests {
            spread.append(try await self.get(agent: "agent-\(Int.random(in: 0..<self.agents))", token: token, expecting: 50))
        }
        print(GateBench.line("GET events?limit=50, agents over the whole log", spread))
        var newest: [Duration] = []
        for _ in 0..<self.requests {
            newest.append(try await self.get(agent: EventLogAgentFill.newcomer, token: token, expecting: 1))
        }
        print(GateBench.line("GET events?limit=50, a new agent (1 event, newest)", newest))
        var absent: [Duration] = []
        for _ in 0..<self.requests {
            absent.append(try await self.get(agent: "no-such-agent", token: token, expecting: 0))
        }
        print(GateBench.line("GET events?limit=50, an agent with no event", absent))

        let reader = EventLogReader(client: client, schema: self.schema, logger: logger)
        let scanner = EventLogReader(client: scanClient, schema: self.schema, logger: logger)
        var read: [Duration] = []
        var scanned: [Duration] = []
        for _ in 0..<self.scans {
            let start = ContinuousClock.now
            _ = try await reader.agentEvents(tenant: tenant, agent: "no-such-agent", before: nil, limit: 50, maxBytes: 4 << 20)
            read.append(ContinuousClock.now - start)
            let scanStart = ContinuousClock.now
            _ = try await scanner.agentEvents(tenant: tenant, agent: "no-such-agent", before: nil, limit: 50, maxBytes: 4 << 20)
            scanned.append(ContinuousClock.now - scanStart)
        }
        print(GateBench.line("the read alone, through the index", read))
        print(GateBench.line("the read alone, indexes refused (a scan)", scanned))
        let median = { (values: [Duration]) in values.sorted()[values.count / 2].secondsDouble }
        print(String(format: "scan / index, medians: %.0f×", median(scanned) / max(median(read), 1e-6)))
    }

    /// One GET, timed; its page must hold `expecting` events.
    private func get(agent: String, token: String, expecting: Int) async throws -> Duration {
        let start = ContinuousClock.now
        let body = try await HTTPClient.shared.getOK("\(self.stack.url)/v1/agents/\(agent)/events?limit=50", token: token)
        let elapsed = ContinuousClock.now - start
        guard let events = (try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any])?["events"] as? [Any],
            events.count == expecting
        else { throw ValidationError("GET /v1/agents/\(agent)/events: not \(expecting) events: \(String(buffer: body).prefix(300))") }
        return elapsed
    }
}
