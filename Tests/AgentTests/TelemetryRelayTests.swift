import AsyncHTTPClient
import Foundation
import Hummingbird
import HummingbirdTesting
import Ingest
import NIOCore
import OTLP
import TelemetryRelay
import TestSupport
import Testing

/// The relay as an attacker running under the connector would use it: against the real ingest
/// and health-monitor, and the real connector.
@Suite("The telemetry relay: the key out of reach, no other agent's name, every bound (live)")
struct TelemetryRelayTests {
    typealias JSON = [String: Any]
    typealias H = AgentHarness

    /// An OTLP JSON logs export of `records` api_request records that claim `claimed` as their
    /// agent on the resource and on each record.
    static func claimingExport(claimed: String, session: String, records: Int = 1) -> String {
        let claim =
            #"{"key":"swarmdeck.agent.id","value":{"stringValue":"\#(claimed)"}},{"key":"swarmdeck.swarm.id","value":{"stringValue":"victims"}}"#
        let record =
            #"{"body":{"stringValue":"claude_code.api_request"},"attributes":[\#(claim),{"key":"event.name","value":{"stringValue":"api_request"}},{"key":"session.id","value":{"stringValue":"\#(session)"}},{"key":"model","value":{"stringValue":"claude-sonnet-4-5"}},{"key":"input_tokens","value":{"intValue":"1234"}},{"key":"cost_usd","value":{"doubleValue":0.5}}]}"#
        let list = Array(repeating: record, count: records).joined(separator: ",")
        return #"{"resourceLogs":[{"resource":{"attributes":[\#(claim)]},"scopeLogs":[{"logRecords":[\#(list)]}]}]}"#
    }

    @Test(
        "a command under the connector (another user) finds no key in its environment or the connector's /proc, and its export claiming another agent is stamped as its own"
    )
    func keyAndImpersonation() async throws {
        let harness = try await AgentHarness()
        try await harness.run { services in
            let token = try await harness.operatorToken()
            let agent = "relay-\(UUID().uuidString.prefix(8))"
            let session = "sess-\(UUID().uuidString.prefix(8))"
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("relay-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: folder.path)
            let export = folder.appendingPathComponent("export.json")
            try Data(Self.claimingExport(claimed: "victim", session: session).utf8).write(to: export)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: export.path)
            let script = """
                cd '\(folder.path)'
                env > env.txt
                cat /proc/$PPID/environ > connector-environ.txt 2>&1
                tr '\\0' ' ' < /proc/$PPID/cmdline > connector-cmdline.txt 2>&1
                header="${OTEL_EXPORTER_OTLP_HEADERS%%=*}: ${OTEL_EXPORTER_OTLP_HEADERS#*=}"
                curl -s -o relay-answer.txt -w '%{http_code}' -H "$header" -H 'Content-Type: application/json' \
                  --data-binary @export.json "$OTEL_EXPORTER_OTLP_ENDPOINT/v1/logs" > relay-status.txt
                curl -s -o /dev/null -w '%{http_code}' -H 'x-swarmdeck-relay: guessed' -H 'Content-Type: application/json' \
                  --data-binary @export.json "$OTEL_EXPORTER_OTLP_ENDPOINT/v1/logs" > relay-guessed.txt
                """
            let connector = Process()
            connector.executableURL = URL(fileURLWithPath: RealAgent.swarmdeck)
            // The key as the docs say: in the environment, never on the command line.
            connector.arguments =
                ["agent", "run"] + services.connectorOptions + ["--swarm", "relays", "--name", agent]
                + (geteuid() == 0 ? ["--user", "nobody"] : []) + ["--", "/bin/sh", "-c", script]
            connector.environment = services.connectorEnvironment
            connector.standardOutput = FileHandle.nullDevice
            connector.standardError = FileHandle.nullDevice
            try connector.run()
            #expect(await RealAgent.exit(of: connector, timeout: .seconds(30)) == 0)

            let read = { (name: String) in (try? String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)) ?? "" }
            for file in ["env.txt", "connector-environ.txt", "connector-cmdline.txt", "relay-answer.txt"] {
                #expect(!read(file).contains(services.key), "the key is in \(file)")
            }
            #expect(read("env.txt").contains("OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:"))
            #expect(read("relay-status.txt") == "200")
            #expect(read("relay-guessed.txt") == "401")

            // Stamped as this agent in this swarm, whatever the export said.
            let mine = try await H.waitFor("the session under \(agent)") {
                let page = try await H.get(services.health, "/v1/context-health?agentId=\(agent)", token: token)
                return (page["sessions"] as? [JSON])?.first { $0["sessionId"] as? String == session }
            }
            #expect(mine["swarmId"] as? String == "relays")
            let victim = try await H.get(services.health, "/v1/context-health?agentId=victim", token: token)
            #expect(try #require(victim["sessions"] as? [JSON]).isEmpty)
        }
    }

    static func post(
        _ client: HTTPClient,
        _ relay: TelemetryRelay,
        body: [UInt8],
        json: Bool = true,
        secret: String? = nil,
        signal: String = "logs"
    ) async throws -> (status: Int, retryAfter: String?) {
        var request = HTTPClientRequest(url: relay.endpoint + "/v1/" + signal)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: json ? "application/json" : "application/x-protobuf")
        request.headers.add(name: TelemetryRelay.secretHeader, value: secret ?? relay.secret)
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), response.headers.first(name: "Retry-After"))
    }

    @Test("bounds: a wrong secret 401, too big 413, past the rate 429, a full queue 503 at once while ingest is away; all counted")
    func bounds() async throws {
        let harness = try await AgentHarness()
        try await harness.run { services in
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            var limits = RelayLimits()
            // Slow enough that the debt below (81 items) outlasts a stall of the loaded machine
            // between two posts: at 50 a second, 1.6 s refilled the bucket and the third passed.
            limits.itemsPerSecond = 5
            limits.burstItems = 100
            limits.maxItemsPerExport = 200
            limits.maxJSONBodyBytes = 200 << 10
            limits.drainTime = .seconds(2)
            let stamp = RelayStamp(swarm: "relays", agent: "bounded")
            let relay = try await TelemetryRelay.start(
                ingestURL: "http://127.0.0.1:\(services.ingest.port!)",
                key: services.key,
                stamp: stamp,
                limits: limits,
                client: client
            )
            let one = Array(Self.claimingExport(claimed: "x", session: "s-bounds").utf8)
            #expect(try await Self.post(client, relay, body: one, secret: "not-it").status == 401)
            #expect(try await Self.post(client, relay, body: Array("{\"resourceLogs\":[".utf8)).status == 400)
            #expect(try await Self.post(client, relay, body: [0xFF, 0x01, 0x02], json: false).status == 400)
            #expect(try await Self.post(client, relay, body: Array(repeating: 0x20, count: 210 << 10)).status == 413)
            let tooMany = Array(Self.claimingExport(claimed: "x", session: "s-bounds", records: 201).utf8)
            #expect(try await Self.post(client, relay, body: tooMany).status == 413)
            // OTLP JSON's hex ids reach ingest as ids (a span with bad ids would be refused).
            let span =
                #"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"tool","startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000001000000000"}]}]}]}"#
            #expect(try await Self.post(client, relay, body: Array(span.utf8), signal: "traces").status == 200)
            // 90 items pass (the burst is 100); the next 90 take the bucket into debt; then 429.
            let ninety = Array(Self.claimingExport(claimed: "x", session: "s-bounds", records: 90).utf8)
            #expect(try await Self.post(client, relay, body: ninety).status == 200)
            #expect(try await Self.post(client, relay, body: ninety).status == 200)
            let refused = try await Self.post(client, relay, body: ninety)
            #expect(refused.status == 429)
            #expect(Int(refused.retryAfter ?? "") ?? 0 >= 1)
            let forwarded = await eventually(timeout: .seconds(20)) { relay.statistics.forwardedItems == 181 }
            #expect(forwarded, "\(relay.statistics)")
            await relay.close()
            let statistics = relay.statistics
            #expect(statistics.acceptedItems == 181 && statistics.rateRefusedItems == 90, "\(statistics)")
            #expect(statistics.badRequests == 5, "\(statistics)")
            #expect(statistics.droppedItems == 0)

            // Ingest away: the relay answers at once until its queue is full, then 503; what is
            // left when it closes is dropped and counted.
            var away = RelayLimits()
            away.bufferBytes = 64 << 10
            away.drainTime = .milliseconds(500)
            let unreachable = try await TelemetryRelay.start(
                ingestURL: "http://127.0.0.1:1",
                key: services.key,
                stamp: stamp,
                limits: away,
                client: client
            )
            let ten = Array(Self.claimingExport(claimed: "x", session: "s-away", records: 10).utf8)
            var statuses: [Int] = []
            let clock = ContinuousClock()
            var slowest = Duration.zero
            for _ in 0..<200 {
                let started = clock.now
                statuses.append(try await Self.post(client, unreachable, body: ten).status)
                slowest = max(slowest, clock.now - started)
                if statuses.last == 503 { break }
            }
            #expect(statuses.last == 503, "\(statuses.count) posts, never full")
            #expect(Set(statuses.dropLast()) == [200])
            #expect(slowest < .seconds(2), "an answer took \(slowest) with ingest away")
            await unreachable.close()
            let lost = unreachable.statistics
            #expect(lost.fullRefusedExports == 1 && lost.droppedItems == lost.acceptedItems && lost.forwardedItems == 0, "\(lost)")
            try await client.shutdown()
        }
    }
}
