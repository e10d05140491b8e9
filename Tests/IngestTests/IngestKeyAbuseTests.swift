import EventLog
import Logging
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

/// Unauthenticated traffic is cheap (issue 11, 4): unknown ingest keys cost no Postgres round
/// trip each; wrong secrets for a real key id neither; a key created on another replica is
/// accepted once its ids are reloaded.
@Suite("Ingest keys under abuse (live Postgres)")
struct IngestKeyAbuseTests {
    static func randomKey() -> String { "sdi_\(randomHex(bytes: 8))_\(randomHex(bytes: 32))" }

    @Test("1000 unknown keys and 100 wrong secrets: no look-up each, a handful of id reloads; new keys from elsewhere still pass")
    func unknownKeysAreCheap() async throws {
        let harness = try await IngestHarness()
        try await harness.application().test(.router) { client in
            let key = try await harness.createKey(client)  // through ingest: the schema exists
            try await harness.withDatabase { database in
                let logger = Logger(label: "test")
                let verifier = IngestKeyVerifier(
                    client: database,
                    schema: harness.schema,
                    logger: logger,
                    cacheLifetime: .seconds(60),
                    lookupTimeout: .seconds(5),
                    reloadInterval: .milliseconds(200)
                )
                #expect(try await verifier.authenticate(key) == harness.tenant)
                let warm = verifier.statistics
                #expect(warm.keyLookups == 1 && warm.reloads == 1)

                let started = ContinuousClock.now
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<20 {
                        group.addTask {
                            for _ in 0..<50 {
                                await #expect(throws: APIError.self, "worker \(worker)") { try await verifier.authenticate(Self.randomKey()) }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                let elapsed = ContinuousClock.now - started
                let wrongSecret = "sdi_" + key.split(separator: "_")[1] + "_" + randomHex(bytes: 32)
                for _ in 0..<100 {
                    await #expect(throws: APIError.self) { try await verifier.authenticate(wrongSecret) }
                }
                let after = verifier.statistics
                #expect(after.keyLookups == warm.keyLookups, "unknown ids and wrong secrets were looked up one by one")
                // Reloads happen at most every 200 ms while the unknown keys arrive.
                let allowed = Int(elapsed.secondsDouble / 0.2) + 2
                #expect(after.reloads - warm.reloads <= allowed, "\(after.reloads - warm.reloads) reloads in \(elapsed)")
                print("ingest key abuse: 1000 unknown keys in \(elapsed): \(after.reloads - warm.reloads) id reloads, 0 key look-ups")

                // A key made by another replica is accepted at the next reload.
                let other = IngestKeyStore(
                    client: database,
                    schema: harness.schema,
                    logger: logger,
                    cacheLifetime: .seconds(60),
                    lookupTimeout: .seconds(5)
                )
                let (_, fresh) = try await other.create(tenant: harness.tenant, name: "elsewhere")
                #expect(try await verifier.authenticate(fresh) == harness.tenant)
                // A revoked key is refused once its cache entry is gone (here: forgotten).
                let freshID = String(fresh.split(separator: "_")[1])
                #expect(try await other.revoke(keyID: freshID, tenant: harness.tenant))
                verifier.forget(keyID: freshID)
                await #expect(throws: APIError.self) { try await verifier.authenticate(fresh) }
            }
        }
    }
}
