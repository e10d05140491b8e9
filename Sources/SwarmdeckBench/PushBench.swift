import APNs
import APNsLocal
import ArgumentParser
import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOCore
import NIOSSL
import ServiceKit
import SwarmdeckTools

/// `swarmdeck-bench push`: the notifier's two targets.
///
/// 1. Throughput to a local APNs server over one HTTP/2 connection with concurrent streams: the
///    production ``APNsClient`` beside a plain async-http-client loop sending the same requests
///    (the ceiling), in one run, in process.
/// 2. With `--stack`: on the running local stack, gate opened → its push received by apns-local,
///    and incident-raising event committed → its push received, each for a device registered
///    just before (so the per-device rate window never folds it).
struct PushBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "APNs throughput (client vs plain async-http-client loop); with --stack, gate/incident → push latency."
    )

    @Option(help: "Pushes per throughput run.")
    var pushes = 20_000

    @Option(help: "Streams in flight at once.")
    var concurrency = 64

    @Flag(help: "Also measure gate → push and incident → push on the running local stack.")
    var stack = false

    @Option(help: "Gates and incidents measured on the stack.")
    var iterations = 50

    @Option(help: "The local stack's apns-local and its CA (default: $SWARMDECK_APNS_URL, $SWARMDECK_APNS_CA_FILE).")
    var apnsURL: String?

    @Option(help: "The local APNs server's CA file.")
    var apnsCAFile: String?

    @OptionGroup var stackOptions: StackBenchOptions

    func run() async throws {
        try await self.throughput()
        if self.stack { try await self.latency() }
    }

    // MARK: Throughput

    private func throughput() async throws {
        let key = P256.Signing.PrivateKey()
        let authority = try LocalCertificateAuthority()
        var logger = Logger(label: "push-bench")
        logger.logLevel = .error
        let server = APNsLocalServer(
            configuration: .init(keys: [APNsLocalKey(keyID: "BENCHKEY01", teamID: "BENCHTEAM1", publicKey: key.publicKey)], authority: authority),
            logger: logger
        )
        let port = try await server.start()
        let url = "https://localhost:\(port)"
        let token = try APNsProviderToken(pem: key.pemRepresentation, keyID: "BENCHKEY01", teamID: "BENCHTEAM1")
        let payload = Data(
            #"{"aps":{"alert":{"title":"Context health","body":"Session s of a1 is at 95% of its context window"}},"type":"incident"}"#.utf8
        )
        print("push-bench: \(self.pushes) pushes, \(self.concurrency) streams in flight, one HTTP/2 connection over TLS to the local APNs server")

        // The ceiling: async-http-client alone, the same requests built once.
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(authority.certificateAuthorityPEM.utf8)))]
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        let bearer = "bearer " + token.token()
        let plain = try await Self.timed(self.pushes, concurrency: self.concurrency) { n in
            var request = HTTPClientRequest(url: url + "/3/device/" + String(format: "%064x", n % 1000 + 1))
            request.method = .POST
            request.headers.add(name: "authorization", value: bearer)
            request.headers.add(name: "apns-topic", value: "dev.swarmdeck.app")
            request.headers.add(name: "apns-push-type", value: "alert")
            request.headers.add(name: "apns-priority", value: "10")
            request.body = .bytes(ByteBuffer(bytes: payload))
            let response = try await http.execute(request, deadline: .now() + .seconds(10))
            _ = try await response.body.collect(upTo: 16 << 10)
            return response.status == .ok
        }
        try await http.shutdown()

        let client = try APNsClient(
            providerToken: token,
            configuration: .init(urls: [.sandbox: url, .production: url], additionalCertificateAuthorityPEM: authority.certificateAuthorityPEM),
            logger: logger
        )
        let ours = try await Self.timed(self.pushes, concurrency: self.concurrency) { n in
            let notification = APNsNotification(
                deviceToken: String(format: "%064x", n % 1000 + 1),
                environment: .sandbox,
                topic: "dev.swarmdeck.app",
                pushType: .alert,
                priority: .immediate,
                expiration: 0,
                collapseID: "incident-\(n % 100)",
                apnsID: UUID(),
                payload: payload
            )
            return try await client.send(notification).status == 200
        }
        try await client.shutdown()
        try await server.stop()
        print(String(format: "  plain async-http-client loop: %8.0f pushes/s  (%d ok)", plain.rate, plain.ok))
        print(
            String(
                format: "  APNsClient (validated, token, headers): %8.0f pushes/s  (%d ok)  ratio %.2f",
                ours.rate,
                ours.ok,
                ours.rate / plain.rate
            )
        )
        print("  connections the server accepted: \(server.connections) (one per client)")
    }

    /// Runs `count` sends, `concurrency` at a time; answers pushes per second and the successes.
    static func timed(_ count: Int, concurrency: Int, _ send: @escaping @Sendable (Int) async throws -> Bool) async throws -> (rate: Double, ok: Int)
    {
        let started = ContinuousClock.now
        let ok = try await withThrowingTaskGroup(of: Bool.self) { group in
            var next = 0
            var ok = 0
            while next < min(concurrency, count) {
                let n = next
                group.addTask { try await send(n) }
                next += 1
            }
            while let result = try await group.next() {
                if result { ok += 1 }
                if next < count {
                    let n = next
                    group.addTask { try await send(n) }
                    next += 1
                }
            }
            return ok
        }
        return (Double(count) / (ContinuousClock.now - started).secondsDouble, ok)
    }

    // MARK: Latency on the stack

    private func latency() async throws {
        let environment = ProcessInfo.processInfo.environment
        let apnsURL = self.apnsURL ?? environment["SWARMDECK_APNS_URL"] ?? "https://127.0.0.1:9443"
        guard let caFile = self.apnsCAFile ?? environment["SWARMDECK_APNS_CA_FILE"] else {
            throw ValidationError("give --apns-ca-file or source .swarmdeck/local.env")
        }
        let key = try self.stackOptions.ingestKey()
        let signer = try await self.stackOptions.signer()
        let base = self.stackOptions.url
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(caFile)]
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        defer { _ = http.shutdown() }
        let run = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let session = try await Self.json(
            http,
            "POST",
            base + "/v1/agent/sessions",
            token: key,
            ["swarmId": "push-bench-\(run)", "agentId": "bench"]
        )
        guard let sessionToken = session["token"] as? String else { throw ValidationError("no agent session: \(session)") }
        let control = try APNsLocalControlToken.read(file: nil, caFile: caFile, environment: environment)
        var after = try await Self.pushes(http, apnsURL, control: control, after: 0).last?["index"] as? Int ?? 0
        var gates: [Duration] = []
        var incidents: [Duration] = []
        print("push-bench: \(self.iterations) gates and \(self.iterations) incidents on \(base), pushes seen at \(apnsURL)")
        for i in 0..<self.iterations {
            for kind in ["gate", "incident"] {
                // A device of its own for each push: the per-device window never folds it.
                let device = "push-bench-\(run)-\(kind)-\(i)"
                let apnsToken = SHA256.hash(data: Data(device.utf8)).map { String(format: "%02x", $0) }.joined()
                let access = try await signer.sign(tenant: self.stackOptions.tenant, subject: device, scopes: [.streamRead])
                _ = try await Self.json(
                    http,
                    "PUT",
                    base + "/v1/devices/me/push",
                    token: access,
                    ["apnsToken": apnsToken, "environment": "sandbox", "topic": "dev.swarmdeck.app"]
                )
                let committed: Date
                var gateID: String?
                if kind == "gate" {
                    let gate = try await Self.json(
                        http,
                        "POST",
                        base + "/v1/agent/gates",
                        token: sessionToken,
                        ["idempotencyKey": device, "summary": "bench gate \(i)", "tool": "Bash", "toolInput": ["command": "true"]]
                    )
                    gateID = gate["gateId"] as? String
                    guard gateID != nil else { throw ValidationError("no gate: \(gate)") }
                    committed = Date()
                } else {
                    let answer = try await Self.json(
                        http,
                        "POST",
                        base + "/v1/ingest/events",
                        token: key,
                        [
                            "events": [
                                [
                                    "msgId": device, "swarmId": "push-bench-\(run)", "agentId": "bench", "kind": "usage",
                                    "model": "claude-sonnet-4-5",
                                    "inputTokens": 190_000, "outputTokens": 1, "attrs": ["session.id": device],
                                ]
                            ]
                        ]
                    )
                    guard answer["accepted"] as? Int == 1 else { throw ValidationError("usage event not accepted: \(answer)") }
                    committed = Date()
                }
                var received: Date?
                let deadline = ContinuousClock.now + .seconds(10)
                while received == nil, ContinuousClock.now < deadline {
                    for push in try await Self.pushes(http, apnsURL, control: control, after: after) {
                        after = max(after, push["index"] as? Int ?? after)
                        if push["deviceToken"] as? String == apnsToken, let at = push["receivedAt"] as? Int64 {
                            received = Date(timeIntervalSince1970: Double(at) / 1000)
                        }
                    }
                    if received == nil { try await Task.sleep(for: .milliseconds(5)) }
                }
                _ = try await Self.json(http, "DELETE", base + "/v1/devices/me/push", token: access, nil)
                if let gateID {
                    // Settled, so the agent stays under its pending gates (a decider per gate: under
                    // approvals.decisions-per-minute).
                    let decider = try await signer.sign(tenant: self.stackOptions.tenant, subject: device, scopes: [.approvalsDecide])
                    _ = try await Self.json(http, "POST", base + "/v1/approval-gates/\(gateID)/decision", token: decider, ["decision": "approve"])
                }
                guard let received else { throw ValidationError("no push for the \(kind) of \(device) within 10 s") }
                let latency = Duration.milliseconds(Int64(max(0, received.timeIntervalSince(committed)) * 1000))
                if kind == "gate" { gates.append(latency) } else { incidents.append(latency) }
            }
        }
        print(GateBench.line("gate opened (201) → push at apns-local", gates))
        print(GateBench.line("usage event committed (200) → incident push at apns-local", incidents))
        try await http.shutdown()
    }

    static func json(_ http: HTTPClient, _ method: String, _ url: String, token: String, _ body: Any?) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: url)
        request.method = .init(rawValue: method)
        request.headers.add(name: "authorization", value: "Bearer " + token)
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await http.execute(request, timeout: .seconds(10))
        let data = try await response.body.collect(upTo: 1 << 20)
        return (try? JSONSerialization.jsonObject(with: Data(buffer: data))) as? [String: Any] ?? [:]
    }

    static func pushes(_ http: HTTPClient, _ url: String, control: String, after: Int) async throws -> [[String: Any]] {
        var request = HTTPClientRequest(url: url + "/_local/pushes?after=\(after)&limit=10000")
        request.headers.add(name: "authorization", value: "Bearer " + control)
        let response = try await http.execute(request, timeout: .seconds(10))
        let data = try await response.body.collect(upTo: 64 << 20)
        return ((try? JSONSerialization.jsonObject(with: Data(buffer: data))) as? [String: Any])?["pushes"] as? [[String: Any]] ?? []
    }
}
