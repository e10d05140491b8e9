import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import StreamTestSupport
import Synchronization
import TestSupport
import Testing

@Suite("Credentials that can be taken back (live NATS, JetStream and Postgres)")
struct ControlRevocationTests {
    typealias H = ControlHarness

    @Test(
        "one tenant flooding the commands stream leaves the store room for another tenant's revocation (a NATS of the test's own whose store holds 12 MiB)"
    )
    func aFloodOfCommandsLeavesRoomForRevocations() async throws {
        let server = try NATSServerProcess(maxFileStore: 12 << 20)
        try await server.start()
        // The commands stream keeps 1 MiB and ingest's ACP stream 4 MiB: 7 MiB are left for the
        // streams bounded by age alone, the revocations among them.
        let harness = try await ControlHarness(["NATS_URL": server.url, "CONTROL_COMMAND_STREAM_MAX_BYTES": String(1 << 20)])
        let flooder = "other-" + harness.tenant
        try await harness.run { _, control in
            let codes = try await ControlAuthTests.codes(control, harness, scopes: ["stream:read"])
            let (_, pair) = try await H.call(control, .post, "/v1/auth/device/register", json: ["code": codes[0], "deviceName": "phone"])
            let access = try #require(pair["accessToken"] as? String)
            let device = try #require(pair["deviceId"] as? String)
            #expect(try await H.call(control, .get, "/v1/overview", token: access).0 == .ok)

            // 9.6 MiB of commands of the other tenant (what its full NATS rights could publish),
            // more than the store has left, each to an agent of its own (no per-agent bound).
            for index in 0..<96 {
                try await harness.live.forge("flood-\(index)", swarm: "s", agent: "a\(index)", action: .request) {
                    $0.tenantID = flooder
                    $0.input = String(repeating: "x", count: 100 * 1024)
                }
            }
            let nats = try await harness.live.connectNATS()
            let jetStream = JetStream(connection: nats)
            let subjects = try Subjects(prefix: harness.prefix)
            let commands = try await jetStream.streamInfo(subjects.controlStreamName)
            #expect((commands.state.bytes ?? .max) <= 1 << 20, "\(String(describing: commands.state.bytes)) bytes")

            let (status, revoked) = try await H.call(
                control,
                .post,
                "/v1/admin/devices/\(device)/revoke",
                token: try await harness.token(scopes: [.admin])
            )
            #expect(status == .ok && revoked["revokedAt"] != nil, "\(status) \(revoked)")
            #expect(try await jetStream.streamInfo(subjects.revocationStreamName).state.messages == 1)
            await nats.close()
            #expect(
                try await eventually(timeout: .seconds(5)) {
                    try await H.call(control, .get, "/v1/overview", token: access).0 == .unauthorized
                }
            )
        }
    }

    @Test("a revoked device: its refresh fails at once, its access token is refused and its open stream closed within 5 s")
    func revokeDevice() async throws {
        let harness = try await ControlHarness()
        try await harness.runWithStream { _, control, fanout in
            let codes = try await ControlAuthTests.codes(control, harness, count: 3, scopes: ["stream:read"])
            let (_, pair) = try await H.call(control, .post, "/v1/auth/device/register", json: ["code": codes[0], "deviceName": "lost phone"])
            let access = try #require(pair["accessToken"] as? String)
            let refresh = try #require(pair["refreshToken"] as? String)
            let device = try #require(pair["deviceId"] as? String)
            #expect(try await H.call(control, .get, "/v1/overview", token: access).0 == .ok)

            // The device's stream is open and subscribed.
            let subscribed = Mutex(false)
            let stream = StreamClient(port: try #require(fanout.port), token: access)
            // The instant the stream ended is taken when it ends, not after the calls below.
            async let outcome = {
                let ended = try await stream.run(sending: [#"{"type":"subscribe"}"#], timeout: .seconds(30)) { frame in
                    if frame["type"] as? String == "subscribed" { subscribed.withLock { $0 = true } }
                    return false
                }
                return (ended, ContinuousClock.now)
            }()
            #expect(await eventually { subscribed.withLock { $0 } })

            let admin = try await harness.token(scopes: [.admin])
            // Another tenant's admin cannot see or revoke it.
            let stranger = try await harness.token(tenant: "other-" + harness.tenant, scopes: [.admin])
            #expect(try await H.call(control, .post, "/v1/admin/devices/\(device)/revoke", token: stranger).0 == .notFound)
            let (_, strangerList) = try await H.call(control, .get, "/v1/admin/devices", token: stranger)
            #expect((strangerList["devices"] as? [Any])?.isEmpty == true)

            let revokedAt = ContinuousClock.now
            let (status, revoked) = try await H.call(control, .post, "/v1/admin/devices/\(device)/revoke", token: admin)
            #expect(status == .ok && revoked["revokedAt"] != nil)
            // Revoking again answers the same device.
            let (again, second) = try await H.call(control, .post, "/v1/admin/devices/\(device)/revoke", token: admin)
            #expect(again == .ok && second["revokedAt"] as? String == revoked["revokedAt"] as? String)

            let (refreshed, refreshBody) = try await H.call(control, .post, "/v1/auth/token/refresh", json: ["refreshToken": refresh])
            #expect(refreshed == .unauthorized && refreshBody.errorCode == "AuthInvalid")
            #expect(
                try await eventually(timeout: .seconds(5)) {
                    try await H.call(control, .get, "/v1/overview", token: access).0 == .unauthorized
                }
            )
            let ((_, close, _), closedAt) = try await outcome
            let closedAfter = closedAt - revokedAt
            #expect(close?.closeCode == .policyViolation, "\(String(describing: close))")
            // Closed by the revoke, not before it (by the stranger's refused one, say), and soon.
            #expect(closedAt > revokedAt, "closed \(revokedAt - closedAt) before the revoke call")
            #expect(closedAfter < .seconds(5), "closed after \(closedAfter)")
            print("revocation: stream closed \(closedAfter) after the revoke call")

            // The device list shows it revoked; a new device of the tenant is unaffected.
            let (_, list) = try await H.call(control, .get, "/v1/admin/devices", token: admin)
            let listed = (list["devices"] as? [[String: Any]] ?? []).first { $0["deviceId"] as? String == device }
            #expect(listed?["revokedAt"] != nil)
            let (created, other) = try await H.call(control, .post, "/v1/auth/device/register", json: ["code": codes[1], "deviceName": "new phone"])
            #expect(created == .created)
            #expect(try await H.call(control, .get, "/v1/overview", token: try #require(other["accessToken"] as? String)).0 == .ok)

            // A revoked code registers nothing; an unknown one is not counted.
            let (_, revokedCodes) = try await H.call(
                control,
                .post,
                "/v1/admin/enrolment-codes/revoke",
                token: admin,
                json: ["codes": [codes[2], "sde_nope"]]
            )
            #expect(revokedCodes["revoked"] as? Int == 1)
            #expect(try await H.call(control, .post, "/v1/auth/device/register", json: ["code": codes[2], "deviceName": "x"]).0 == .unauthorized)
        }
    }
}
