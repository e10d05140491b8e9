import Contracts
import ControlAPI
import Foundation
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

/// One OpenAPI document the fuzzer runs against: its service started as its harness starts it,
/// with something to find, and schemathesis run on the served document once per credential its
/// operations take (``Schemathesis/run(port:document:authorization:pathRegex:seed:)``).
struct FuzzedDocument: Sendable, CustomTestStringConvertible {
    /// One run: its label, schemathesis's exit status and the tail of its report.
    typealias Run = (label: String, status: Int32, report: String)

    /// Its name: `openapi/<name>.yaml`.
    let name: String
    /// Starts what the document's service needs, fuzzes it with `seed`, stops it.
    let fuzz: @Sendable (_ seed: Int) async throws -> [Run]

    var testDescription: String { self.name }

    /// Every document, each fuzzed whole: the check below holds the list to the documents
    /// `scripts/generate-openapi` knows.
    static let all: [FuzzedDocument] = [
        .controlAPI, .agentChannel, .approvals, .healthMonitor, .notifier, .terminalBroker, .pipelineRunner,
    ]

    /// Control-api's operators' document, sign-in through a provider on (a real one: its
    /// operations run their own code, not the 404 of a service without one), with an access
    /// token holding every scope; something to find: a swarm with an agent, a control request,
    /// an audit trail.
    static let controlAPI = FuzzedDocument(name: "control-api") { seed in
        let (provider, oidc) = try await ControlHarness.withOIDCProvider(["CONTROL_MAX_POLL_SECONDS": "1"])
        defer { withExtendedLifetime(provider) {} }
        var configured = oidc
        // The sign-ins' limit at its default: the fuzzer meets its 429s as a client would.
        configured.live.overrides["CONTROL_AUTH_PER_MINUTE"] = nil
        let harness = configured
        return try await harness.run(.live) { ingest, control in
            let key = try await harness.createKey(ingest)
            try await harness.announce(ingest, control, key: key, agent: "a1", swarm: "s1")
            let token = try await harness.token()
            let body: [String: Any] = ["action": "pause", "reason": "fuzz", "requestId": "seed-1"]
            #expect(try await ControlHarness.call(control, .post, "/v1/agents/a1/control", token: token, json: body).0 == .accepted)
            return [try await Self.run("operators", control, token: token, paths: "^/(v1/|\\.well-known)", seed: seed)]
        }
    }

    /// The agents' channel (control-api serves it): sessions with an ingest key, the commands
    /// with a session token (short waits: `waitSeconds` is fuzzed too); a control waiting.
    static let agentChannel = FuzzedDocument(name: "agent-channel") { seed in
        let harness = try await ControlHarness(["CONTROL_MAX_POLL_SECONDS": "1"])
        return try await harness.run(.live) { ingest, control in
            let key = try await harness.createKey(ingest)
            try await harness.announce(ingest, control, key: key, agent: "a1", swarm: "s1")
            let body: [String: Any] = ["action": "pause", "reason": "fuzz", "requestId": "seed-1"]
            #expect(
                try await ControlHarness.call(control, .post, "/v1/agents/a1/control", token: try await harness.token(), json: body).0 == .accepted
            )
            let session = try await ControlHarness.openSession(control, key: key, swarm: "s1", agent: "a1")
            let document = ControlAPIService.agentChannelDocumentPath
            // Side by side (each schemathesis is one process on one core).
            async let sessions = Self.run("sessions (ingest key)", control, document: document, token: key, paths: "^/v1/agent/sessions$", seed: seed)
            async let commands = Self.run(
                "commands (session token)",
                control,
                document: document,
                token: session,
                paths: "^/v1/agent/commands",
                seed: seed
            )
            return [try await sessions, try await commands]
        }
    }

    /// Approvals: people's operations with an access token, agents' with a session token;
    /// something to find: a pending gate, a decided one.
    static let approvals = FuzzedDocument(name: "approvals") { seed in
        let harness = try await ApprovalsHarness()
        return try await harness.run(.live) { ingest, control, approvals in
            let session = try await harness.session(ingest, control, agent: "a1")
            _ = try await ApprovalsHarness.open(approvals, session: session)
            let decided = try await ApprovalsHarness.open(approvals, session: session)
            let phone = try await harness.token(scopes: Set(Scope.allCases))
            #expect(
                try await LiveCall.call(approvals, .post, "/v1/approval-gates/\(decided)/decision", token: phone, json: ["decision": "approve"]).0
                    == .ok
            )
            return [
                try await Self.run("people (access token)", approvals, token: phone, paths: "^/v1/approval-gates", seed: seed),
                try await Self.run("agents (session token)", approvals, token: session, paths: "^/v1/agent/gates", seed: seed),
            ]
        }
    }

    /// Health-monitor; something to find: a session near capacity, a skill, an incident.
    static let healthMonitor = FuzzedDocument(name: "health-monitor") { seed in
        let harness = try await HealthHarness()
        return try await harness.run { ingest, _, health in
            let key = try await harness.live.createKey(ingest)
            try await harness.post(
                ingest,
                key: key,
                [
                    ["kind": "usage", "swarmId": "w", "agentId": "a", "inputTokens": 190_000, "outputTokens": 1, "attrs": ["session.id": "s1"]],
                    ["kind": "tool_call", "swarmId": "w", "agentId": "a", "tool": "Bash", "ok": false, "error": "exit 1", "latencyMs": 40],
                ]
            )
            let token = try await harness.token(scopes: Set(Scope.allCases))
            _ = try await HealthHarness.incident(health, token: token, rule: "context_near_capacity")
            return [try await Self.run("every operation", health, token: token, paths: "^/v1/", seed: seed)]
        }
    }

    /// The notifier, pushing to the local APNs.
    static let notifier = FuzzedDocument(name: "notifier") { seed in
        let harness = try await NotifierHarness.start()
        let runs = try await harness.run(.live) { notifier in
            [try await Self.everyOperation(notifier, harness.live, subject: "fuzzed-phone", seed: seed)]
        }
        try await harness.stop()
        return runs
    }

    /// Terminal-broker with a real sshd and tmux: a registered host with a session. Hosts the
    /// fuzzer registers point anywhere: a short connect timeout and a small cap keep its
    /// session listings quick.
    static let terminalBroker = FuzzedDocument(name: "terminal-broker") { seed in
        let harness = try await TerminalHarness(["TERMINAL_CONNECT_TIMEOUT_SECONDS": "1", "TERMINAL_MAX_HOSTS_PER_TENANT": "5"])
        defer { harness.sshd.stop() }
        try await harness.sshd.newSession("fuzzed")
        return try await harness.run { client in
            _ = try await harness.register(client)
            return [try await Self.everyOperation(client, harness.live, subject: "fuzzer", seed: seed)]
        }
    }

    /// Pipeline-runner against the local provider, its limits out of the fuzzer's way.
    static let pipelineRunner = FuzzedDocument(name: "pipeline-runner") { seed in
        let harness = try await PipelineHarness(["PIPELINE_CREATES_PER_MINUTE": "100000", "PIPELINE_MAX_ACTIVE_PER_TENANT": "100000"])
        defer { Task { await harness.stop() } }
        return try await harness.run(.live) { _, _, _, pipelines in
            [try await Self.everyOperation(pipelines, harness.live, subject: "fuzzer", seed: seed)]
        }
    }

    /// One run, labelled: schemathesis on `document` of the service `client` reaches (on its
    /// port), with `token`, on the paths `paths` matches.
    static func run(
        _ label: String,
        _ client: any TestClientProtocol,
        document: String = "openapi.yaml",
        token: String,
        paths: String,
        seed: Int
    ) async throws -> Run {
        let (status, report) = try await Schemathesis.run(
            port: try #require(client.port),
            document: document,
            authorization: "Bearer \(token)",
            pathRegex: paths,
            seed: seed
        )
        return (label, status, report)
    }

    /// The usual run: every `/v1/` operation with an access token of `subject` holding every scope.
    static func everyOperation(_ client: any TestClientProtocol, _ live: LiveHarness, subject: String, seed: Int) async throws -> Run {
        let token = try await live.token(subject: subject, scopes: Set(Scope.allCases))
        return try await Self.run("every operation", client, token: token, paths: "^/v1/", seed: seed)
    }
}

@Suite("Every OpenAPI document fuzzed (schemathesis against the served document, the services live)")
struct DocumentFuzzTests {
    @Test(
        "no generated request gets a 5xx, or a status the document does not list, from any operation",
        .tags(.heavy),
        arguments: FuzzedDocument.all
    )
    func noServerErrors(document: FuzzedDocument) async throws {
        let seed = Int.random(in: 1..<1_000_000)
        let runs = try await document.fuzz(seed)
        #expect(!runs.isEmpty)
        for run in runs {
            #expect(run.status == 0, "\(document.name), \(run.label): schemathesis (seed \(seed)) found failures:\n\(run.report)")
        }
    }

    @Test("every document scripts/generate-openapi makes a contract from is fuzzed, once")
    func everyDocument() throws {
        let names = FuzzedDocument.all.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(Set(names) == Set(try OpenAPIDeclarations.generatedDocuments()))
    }
}
