import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@Suite("Ingest when Postgres goes away (live, private Postgres)")
struct IngestOutageTests {
    @Test("Postgres stopped: 503 with Retry-After, nothing half-stored; back: ingest recovers without a restart")
    func postgresOutage() async throws {
        let postgres = try await PostgresServerProcess.make()
        try await postgres.start()
        // Ingest's own deadline (the harness's default is 30 s): a request with Postgres gone
        // is answered 503 when it passes.
        let harness = try await IngestHarness(
            overrides: ["POSTGRES_URL": postgres.url, "INGEST_KEY_CACHE_SECONDS": "600", "INGEST_COMMIT_TIMEOUT_SECONDS": "5"]
        )
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)
            let before = try await harness.post(client, key: key, events: [logEvent("before-1"), logEvent("before-2")])
            #expect(before.0 == .ok)

            try await postgres.stop()
            let body = try JSONSerialization.data(withJSONObject: ["events": [logEvent("during-1")]])
            try await client.execute(
                uri: "/v1/ingest/events",
                method: .post,
                headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                body: ByteBuffer(bytes: body)
            ) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.headers[.retryAfter] == "1")
                let envelope = try JSONDecoder().decode(ErrorEnvelope.self, from: Data(buffer: response.body))
                #expect(envelope.error.code == .serviceUnavailable)
                #expect(envelope.error.retryable)
            }
            try await client.execute(uri: "/readyz", method: .get) { #expect($0.status == .serviceUnavailable) }

            try await postgres.start()
            // The same request, retried until Postgres is back: accepted once, with the next seq.
            var after: BatchAnswer?
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                let attempt = try await harness.post(client, key: key, events: [logEvent("during-1")])
                if attempt.0 == .ok {
                    after = attempt.1
                    break
                }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(after?.results.first?.status == "accepted")
            #expect(after?.results.first?.seq == 3)
            try await client.execute(uri: "/readyz", method: .get) { #expect($0.status == .ok) }
        }
    }
}
