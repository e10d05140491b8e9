import Contracts
import Foundation
import HummingbirdTesting
import ServiceKit
import TestSupport
import Testing

@Suite("Control-api fuzzed from its OpenAPI document (schemathesis, live NATS and Postgres)")
struct ControlFuzzTests {
    typealias H = ControlHarness

    /// Runs schemathesis against the document control-api serves, with one credential;
    /// returns its exit status and the tail of its report.
    static func schemathesis(port: Int, authorization: String, pathRegex: String, seed: Int) async throws -> (Int32, String) {
        let binary = try #require(
            ProcessInfo.processInfo.environment["SWARMDECK_SCHEMATHESIS"],
            "SWARMDECK_SCHEMATHESIS is not set: run the tests with ./scripts/test (it installs schemathesis)"
        )
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [
            "run", "http://127.0.0.1:\(port)/openapi.yaml", "--url", "http://127.0.0.1:\(port)",
            "--header", "Authorization: \(authorization)", "--checks", "not_a_server_error,status_code_conformance",
            "--include-path-regex", pathRegex, "--max-examples", "40", "--seed", String(seed), "--request-timeout", "120",
            // One worker: CPython 3.11's ast.parse, which hypothesis calls, is not thread-safe.
            "--workers", "1", "--no-color",
        ]
        // Its example database goes to a scratch folder, not the working copy.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("schemathesis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        process.currentDirectoryURL = scratch
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let reader = output.fileHandleForReading
        let data = try await offPool {
            let data = reader.readDataToEndOfFile()
            process.waitUntilExit()
            return data
        }
        return (process.terminationStatus, String(decoding: data.suffix(6000), as: UTF8.self))
    }

    @Test("no generated request gets a 5xx, or a status the document does not list, from any operation")
    func noServerErrors() async throws {
        // Long polls end after a second, so that fuzzing their wait takes seconds, not hours.
        let harness = try await ControlHarness(["CONTROL_MAX_POLL_SECONDS": "1"])
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
            // Operators' operations with an access token holding every scope.
            let (operators, operatorReport) = try await Self.schemathesis(
                port: port,
                authorization: "Bearer \(token)",
                pathRegex: "^/(v1/(?!agent/)|\\.well-known)",
                seed: seed
            )
            #expect(operators == 0, "schemathesis (seed \(seed)) found failures:\n\(operatorReport)")
            // The agents' channel: sessions with an ingest key, the commands with a session token
            // (short waits: waitSeconds is fuzzed too).
            let (sessions, sessionReport) = try await Self.schemathesis(
                port: port,
                authorization: "Bearer \(key)",
                pathRegex: "^/v1/agent/sessions$",
                seed: seed
            )
            #expect(sessions == 0, "schemathesis (seed \(seed)) found failures:\n\(sessionReport)")
            let session = try await H.openSession(control, key: key, swarm: "s1", agent: "a1")
            let (agents, agentReport) = try await Self.schemathesis(
                port: port,
                authorization: "Bearer \(session)",
                pathRegex: "^/v1/agent/commands",
                seed: seed
            )
            #expect(agents == 0, "schemathesis (seed \(seed)) found failures:\n\(agentReport)")
        }
    }
}
