import Configuration
public import Contracts
public import Foundation
public import Hummingbird
public import HummingbirdTesting
public import PostgresNIO
public import ServiceKit

/// What every live test of a service needs, once: names of its own (a subject prefix, a
/// tenant, schemas), a signing key whose public half the services verify with, the
/// environment that points the services at the test NATS and Postgres, the services built in
/// process from that environment, tokens, and ingest keys made through ingest's admin API.
public struct LiveHarness: Sendable {
    public let prefix = TestEnvironment.uniqueName("p")
    public let tenant = "tenant-" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)
    /// Ingest's schema (the event log); every service of the harness reads it there.
    public let ingestSchema = TestEnvironment.uniqueName("ing")
    /// The schema of stream-fanout, control-api or any other service (each adds its suffix).
    public let serviceSchema = TestEnvironment.uniqueName("svc")
    /// The private key's PEM file; the public half is `<path>.pub`.
    public let keyFile: URL
    public let signer: AccessTokenSigner
    /// Variables that win over the harness's own.
    public var overrides: [String: String]

    public init(overrides: [String: String] = [:]) async throws {
        let pair = AccessTokenSigner.generateKeyPair()
        self.keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("swarmdeck-test-\(UUID().uuidString).pem")
        try Data(pair.privateKey.utf8).write(to: self.keyFile)
        try Data(pair.publicKey.utf8).write(to: URL(fileURLWithPath: self.keyFile.path + ".pub"))
        self.signer = try await AccessTokenSigner(privateKeyPEM: pair.privateKey, keyID: "swarmdeck-1", issuer: "swarmdeck", audience: "swarmdeck")
        self.overrides = overrides
    }

    /// The environment of the harness's services; `prefix` replaces the subject prefix (a
    /// service on another prefix never hears this one's publishes).
    public func environment(prefix: String? = nil) throws -> [String: String] {
        var environment = [
            "NATS_URL": try TestEnvironment.natsURL,
            "POSTGRES_URL": try TestEnvironment.databaseURL,
            "POSTGRES_MAX_CONNECTIONS": "8",
            "INGEST_SCHEMA": self.ingestSchema,
            "FANOUT_EVENT_LOG_SCHEMA": self.ingestSchema,
            "FANOUT_SCHEMA": self.serviceSchema + "_fan",
            "CONTROL_SCHEMA": self.serviceSchema + "_ctl",
            "CONTROL_INGEST_SCHEMA": self.ingestSchema,
            "APPROVALS_SCHEMA": self.serviceSchema + "_apr",
            "HEALTH_SCHEMA": self.serviceSchema + "_hm",
            "HEALTH_INGEST_SCHEMA": self.ingestSchema,
            "SUBJECTS_PREFIX": prefix ?? self.prefix,
            "AUTH_JWT_PUBLIC_KEY_FILE": self.keyFile.path + ".pub",
            "AUTH_JWT_PRIVATE_KEY_FILE": self.keyFile.path,
            "LOG_LEVEL": "warning",
            // Suites of other things post one tenant's events faster than a tenant's default
            // rate allows; IngestTenantRateTests tests the rate with its own.
            "INGEST_TENANT_EVENTS_PER_SECOND": "10000000", "INGEST_TENANT_STATE_EVENTS_PER_SECOND": "10000000",
            // A group's tests run in one process with the services they start, on two cores: a
            // test that keeps both cores busy stalls every service task for seconds (6 s seen, the
            // process at 150-200 % CPU, Postgres idle, ingest's transactions idle in transaction),
            // and ingest's 5-s deadlines (commit, rate refill, key look-up) then answer the other
            // tests 503. The tests of those deadlines set their own.
            "INGEST_COMMIT_TIMEOUT_SECONDS": "30",
            // JetStream reserves a stream's max bytes: each test's ACP stream takes little.
            "INGEST_ACP_STREAM_MAX_BYTES": "4194304", "CONTROL_COMMAND_STREAM_MAX_BYTES": "4194304",
            "NATS_NOTICE_STREAM_MAX_BYTES": "4194304",
        ]
        environment.merge(self.overrides) { $1 }
        return environment
    }

    /// `service` built in process from the harness's environment (plus `extra`).
    public func application<Service: SwarmdeckService>(
        _ service: Service.Type,
        prefix: String? = nil,
        extra: [String: String] = [:]
    ) async throws -> some ApplicationProtocol {
        var environment = try self.environment(prefix: prefix)
        environment.merge(extra) { $1 }
        return try await service.application(reader: try await ServiceConfiguration.reader(arguments: [service.name], environment: environment))
    }

    /// An access token of the harness's tenant (or `tenant`).
    public func token(tenant: String? = nil, subject: String = "phone", scopes: Set<Scope> = [.streamRead]) async throws -> String {
        try await self.signer.sign(tenant: tenant ?? self.tenant, subject: subject, scopes: scopes)
    }

    /// A new ingest key of the harness's tenant (or `tenant`), through ingest's admin API.
    public func createKey(_ ingest: some TestClientProtocol, tenant: String? = nil) async throws -> String {
        let token = try await self.token(tenant: tenant, subject: "admin", scopes: [.admin])
        return try await ingest.execute(
            uri: "/v1/admin/ingest-keys",
            method: .post,
            headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
            body: ByteBuffer(string: #"{"name":"test"}"#)
        ) { response in
            guard response.status == .created,
                let object = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any],
                let key = object["key"] as? String
            else {
                throw HarnessError(message: "creating an ingest key answered \(response.status): \(String(buffer: response.body))")
            }
            return key
        }
    }

    /// Posts one ACP message (its exact bytes) to `thread` with `key`: the status.
    /// Runs `body` with a Postgres client of its own whose unqualified names resolve to
    /// ingest's schema of this test.
    public func withDatabase<T: Sendable>(_ body: (PostgresClient) async throws -> T) async throws -> T {
        var configuration = try PostgresClient.Configuration(url: try self.environment()["POSTGRES_URL"]!, maxConnections: 2)
        configuration.options.additionalStartupParameters = [("search_path", self.ingestSchema)]
        let client = PostgresClient(configuration: configuration)
        let running = Task { await client.run() }
        defer { running.cancel() }
        return try await body(client)
    }

    public func postACP(
        _ ingest: some TestClientProtocol,
        key: String,
        thread: String,
        body: String,
        msgID: String,
        swarm: String = "s1",
        agent: String = "a1"
    ) async throws -> HTTPResponse.Status {
        try await ingest.execute(
            uri: "/v1/ingest/acp/\(thread)?swarmId=\(swarm)&agentId=\(agent)&direction=agent_to_client&msgId=\(msgID)",
            method: .post,
            headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
            body: ByteBuffer(string: body)
        ) { $0.status }
    }

    /// Posts a native batch with `key`: the status and the answer's bytes. A request not
    /// answered within a minute (ingest answers 503 at its commit timeout) fails the test at once
    /// rather than holding it until its group's time runs out.
    public func postEvents(
        _ ingest: some TestClientProtocol,
        key: String,
        _ events: [[String: Any]]
    ) async throws -> (HTTPResponse.Status, ByteBuffer) {
        let body = try JSONSerialization.data(withJSONObject: ["events": events])
        return try await withDeadline(
            .seconds(60),
            orThrow: HarnessError(message: "POST /v1/ingest/events was not answered within 60 s")
        ) {
            try await ingest.execute(
                uri: "/v1/ingest/events",
                method: .post,
                headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                body: ByteBuffer(bytes: body)
            ) { response in
                (response.status, response.body)
            }
        }
    }
}

extension LiveHarness {
    /// ``postEvents(_:key:_:)`` as a client posts: each event without a `msgId` is given one
    /// first, and the batch is sent again while it answers 503 (``LiveCall/retryingUnavailable(within:_:)``:
    /// on a loaded machine a commit or the tenant's first rate refill can pass its deadline), so
    /// what an attempt stored before its 503 answers `duplicate` and is stored once. For the tests
    /// whose subject is not the 503; `retried` says whether an attempt answered 503 (only then
    /// may the answer hold duplicates the test did not send).
    public func postEventsRetrying(
        _ ingest: some TestClientProtocol,
        key: String,
        _ events: [[String: Any]]
    ) async throws -> (status: HTTPResponse.Status, body: ByteBuffer, retried: Bool) {
        let events = events.map { $0.merging(["msgId": UUID().uuidString]) { old, _ in old } }
        var attempts = 0
        let (status, body) = try await LiveCall.retryingUnavailable {
            attempts += 1
            return try await self.postEvents(ingest, key: key, events)
        }
        return (status, body, attempts > 1)
    }
}

/// A harness step that did not go as a test needs.
public struct HarnessError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { self.message }

    public init(message: String) {
        self.message = message
    }
}

extension LiveHarness {
    /// Publishes `command` on its agent's control subject, stored by JetStream, as any process
    /// with full NATS rights could: what the services and the connector must not obey unless
    /// its issuer stands by it.
    /// A command of the harness's tenant for `agent` of `swarm`, issued "now" by an attacker,
    /// shaped further by `configure`, forged on the bus as ``forge(_:)`` does.
    public func forge(
        _ id: String,
        swarm: String,
        agent: String,
        action: BusControlAction,
        _ configure: (inout BusControlCommand) -> Void = { _ in }
    ) async throws {
        var command = BusControlCommand()
        command.commandID = id
        command.tenantID = self.tenant
        command.requestID = "forged"
        command.swarmID = swarm
        command.agentID = agent
        command.action = action
        command.reason = "forged"
        command.actor = "attacker"
        command.issuedUnixNano = Int64(Date().timeIntervalSince1970 * 1e9)
        configure(&command)
        try await self.forge(command)
    }

    /// A gate outcome that approves `gate`.
    public static func approving(_ gate: String) -> BusGateOutcome {
        var outcome = BusGateOutcome()
        outcome.gateID = gate
        outcome.status = "approved"
        outcome.allow = true
        outcome.decidedBy = "attacker"
        return outcome
    }

    public func forge(_ command: BusControlCommand) async throws {
        let nats = try await self.connectNATS()
        let subjects = try Subjects(prefix: self.prefix)
        let subject = subjects.controlCommand(tenant: command.tenantID, swarm: command.swarmID, agent: command.agentID)
        _ = try await JetStream(connection: nats).publish(try command.serializedBytes() as [UInt8], to: subject, messageID: command.commandID)
        await nats.close()
    }

    /// A connection to the NATS the services use (the test's own server, when `NATS_URL` is
    /// among the overrides).
    public func connectNATS(name: String = #function) async throws -> NATSConnection {
        guard let url = self.overrides["NATS_URL"] else { return try await TestEnvironment.connect(name: name) }
        return try await NATSConnection.connect(NATSConfiguration(servers: [url], name: name))
    }
}
