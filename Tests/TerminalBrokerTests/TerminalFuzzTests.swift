import Contracts
import Foundation
import TestSupport
import Testing

@Suite("terminal-broker fuzzed from its OpenAPI document (schemathesis, live Postgres and NATS, a real sshd and tmux)", .tags(.heavy))
struct TerminalFuzzTests {
    @Test("no generated request gets a 5xx, or a status the document does not list, from any operation")
    func noServerErrors() async throws {
        // Hosts the fuzzer registers point anywhere: a short connect timeout and a small cap keep
        // its session listings quick.
        let harness = try await TerminalHarness(["TERMINAL_CONNECT_TIMEOUT_SECONDS": "1", "TERMINAL_MAX_HOSTS_PER_TENANT": "5"])
        try await harness.sshd.newSession("fuzzed")
        try await harness.run { client in
            _ = try await harness.register(client)
            let token = try await harness.live.token(subject: "fuzzer", scopes: Set(Scope.allCases))
            let seed = Int.random(in: 1..<1_000_000)
            let (status, report) = try await Schemathesis.run(
                port: try #require(client.port),
                authorization: "Bearer \(token)",
                pathRegex: "^/v1/",
                seed: seed
            )
            #expect(status == 0, "schemathesis (seed \(seed)) found failures:\n\(report)")
        }
        harness.sshd.stop()
    }
}
