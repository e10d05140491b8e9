import Contracts
import ControlAPI
import Foundation
import HummingbirdTesting
import ServiceKit
import TestSupport
import Testing

@Suite("Control-api fuzzed from its OpenAPI document (schemathesis, live NATS and Postgres)", .tags(.heavy))
struct ControlFuzzTests {
    typealias H = ControlHarness

    @Test("no generated request gets a 5xx, or a status the document does not list, from any operation")
    func noServerErrors() async throws {
        // Sign-in through a provider is on (a real one: its operations run their own code, not
        // the 404 of a service without one).
        let (provider, oidc) = try await OIDCSignInTests.setUp()
        defer { withExtendedLifetime(provider) {} }
        var configured = try await ControlHarness(["CONTROL_MAX_POLL_SECONDS": "1"])
        configured.live.overrides.merge(oidc.live.overrides.filter { $0.key.hasPrefix("CONTROL_OIDC_") }) { $1 }
        configured.live.overrides["CONTROL_OIDC_TENANT"] = configured.tenant
        let harness = configured
        try await harness.run(.live) { ingest, control in
            let key = try await harness.createKey(ingest)
            // Something to find: a swarm with an agent, a control request, an audit trail.
            try await harness.announce(ingest, control, key: key, agent: "a1", swarm: "s1")
            let token = try await harness.token()
            #expect(
                try await H.call(
                    control,
                    .post,
                    "/v1/agents/a1/control",
                    token: token,
                    json: ["action": "pause", "reason": "fuzz", "requestId": "seed-1"]
                ).0 == .accepted
            )
            let port = try #require(control.port)
            let seed = Int.random(in: 1..<1_000_000)
            let session = try await H.openSession(control, key: key, swarm: "s1", agent: "a1")
            // The three fuzzes run side by side (each schemathesis is one process on one core).
            // Operators' operations with an access token holding every scope.
            async let operatorRun = Schemathesis.run(port: port, authorization: "Bearer \(token)", pathRegex: "^/(v1/|\\.well-known)", seed: seed)
            // The agents' channel, its own document: sessions with an ingest key, the commands
            // with a session token (short waits: waitSeconds is fuzzed too).
            async let sessionRun = Schemathesis.run(
                port: port,
                document: ControlAPIService.agentChannelDocumentPath,
                authorization: "Bearer \(key)",
                pathRegex: "^/v1/agent/sessions$",
                seed: seed
            )
            async let agentRun = Schemathesis.run(
                port: port,
                document: ControlAPIService.agentChannelDocumentPath,
                authorization: "Bearer \(session)",
                pathRegex: "^/v1/agent/commands",
                seed: seed
            )
            let (operators, operatorReport) = try await operatorRun
            #expect(operators == 0, "schemathesis (seed \(seed)) found failures:\n\(operatorReport)")
            let (sessions, sessionReport) = try await sessionRun
            #expect(sessions == 0, "schemathesis (seed \(seed)) found failures:\n\(sessionReport)")
            let (agents, agentReport) = try await agentRun
            #expect(agents == 0, "schemathesis (seed \(seed)) found failures:\n\(agentReport)")
        }
    }
}
