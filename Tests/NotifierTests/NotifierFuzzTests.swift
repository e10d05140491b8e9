import Contracts
import Foundation
import HummingbirdTesting
import ServiceKit
import TestSupport
import Testing

@Suite("Notifier fuzzed from its OpenAPI document (schemathesis, live NATS, Postgres and local APNs)", .tags(.heavy))
struct NotifierFuzzTests {
    @Test("no generated request gets a 5xx, or a status the document does not list, from any operation")
    func noServerErrors() async throws {
        let harness = try await NotifierHarness.start()
        try await harness.run(.live) { notifier in
            let token = try await harness.live.token(subject: "fuzzed-phone", scopes: Set(Scope.allCases))
            let seed = Int.random(in: 1..<1_000_000)
            let (status, report) = try await Schemathesis.run(
                port: try #require(notifier.port),
                authorization: "Bearer \(token)",
                pathRegex: "^/v1/",
                seed: seed
            )
            #expect(status == 0, "schemathesis (seed \(seed)) found failures:\n\(report)")
        }
        try await harness.stop()
    }
}
