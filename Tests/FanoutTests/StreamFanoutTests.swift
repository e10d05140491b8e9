import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOPosix
import PlainWebSocket
import ServiceHarnesses
import ServiceKit
import StreamTestSupport
import Synchronization
import TestSupport
import Testing

@testable import StreamFanout

@Suite("Stream-fanout /v1/stream (live NATS + Postgres, ingest in process)")
struct StreamFanoutTests {
    /// A counter's value on `/metrics` (process-wide).
    static func metric(_ name: String, _ client: some TestClientProtocol) async throws -> Double {
        try await client.execute(uri: "/metrics", method: .get) { response in
            let text = String(buffer: response.body)
            let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
            return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
        }
    }

    /// Sends an upgrade request for `path` on a new connection and returns what the server
    /// answers (its head, and its body for a refusal) until it closes or a 101's head ends.
    static func rawUpgrade(port: Int, path: String, token: String?, requestID: String?) async throws -> String {
        try await withThrowingTaskGroup(of: String.self) { group in
            group.addTask { try await Self.rawExchange(port: port, path: path, token: token, requestID: requestID) }
            group.addTask {
                try await Task.sleep(for: .seconds(10))
                throw HarnessError(message: "no answer to the upgrade of /\(path) in 10 s")
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    private static func rawExchange(port: Int, path: String, token: String?, requestID: String?) async throws -> String {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port) {
            channel in
            channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
        }
        return try await channel.executeThenClose { inbound, outbound in
            var request = "GET /\(path)?protocol=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            request += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            if let token { request += "Authorization: Bearer \(token)\r\n" }
            if let requestID { request += "x-request-id: \(requestID)\r\n" }
            try await outbound.write(ByteBuffer(string: request + "\r\n"))
            var answer = ""
            for try await buffer in inbound {
                answer += String(buffer: buffer)
                if answer.hasPrefix("HTTP/1.1 101 "), answer.contains("\r\n\r\n") { break }
            }
            return answer
        }
    }

    @Test("resume with lastEventId: the log after it, then live, while ingest writes: every seq once, in order")
    func resumeThenTail() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            for batch in 0..<5 {
                try await harness.post(ingest, key: key, (0..<20).map { logEvent("pre-\(batch)-\($0)") })
            }
            try await harness.fanout().test(.live) { fanout in
                let client = StreamClient(port: try #require(fanout.port), token: try await harness.token())
                async let writes: Void = {
                    for batch in 0..<20 {
                        try await harness.post(ingest, key: key, (0..<10).map { logEvent("live-\(batch)-\($0)") })
                        try await Task.sleep(for: .milliseconds(10))
                    }
                }()
                // The deadline guards against a hang; on two loaded cores the writes have taken 35 s.
                let (frames, _, _) = try await client.run(sending: [subscribe(lastEventId: 40)], timeout: .seconds(120)) {
                    ($0["seq"] as? Int) == 300
                }
                try await writes
                #expect(frames.first?["type"] as? String == "subscribed")
                #expect(frames.first?["fromSeq"] as? Int == 41)
                #expect(frames.seqs == Array(41...300))
            }
        }
    }

    @Test("a replay whose filter matches nothing stops after fanout.max-replay-scan seqs with a scan_limit gap, then goes live")
    func fruitlessReplayIsBounded() async throws {
        let harness = try await FanoutHarness(fanout: ["FANOUT_MAX_REPLAY_SCAN": "1000"])
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            for batch in 0..<3 {
                try await harness.post(ingest, key: key, (0..<2000).map { logEvent("bulk-\(batch)-\($0)") })
            }
            try await harness.fanout().test(.live) { fanout in
                let client = StreamClient(port: try #require(fanout.port), token: try await harness.token())
                let (frames, _, _) = try await client.run(sending: [subscribe(lastEventId: 0, filters: ["agentIds": ["nobody"]])]) {
                    $0["type"] as? String == "gap"
                }
                let gap = try #require(frames.last)
                #expect(gap["reason"] as? String == "scan_limit", "\(gap)")
                #expect(gap["fromSeq"] as? Int == 1001 && gap["toSeq"] as? Int == 6000, "\(gap)")
                // The same replay with a filter that matches gets everything.
                let (all, _, _) = try await client.run(sending: [subscribe(lastEventId: 0, filters: ["agentIds": ["a1"]])]) {
                    ($0["seq"] as? Int) == 6000
                }
                #expect(all.seqs == Array(1...6000))
            }
        }
    }

    @Test("fromTime: the replay starts at the first event committed since that time; with lastEventId too, or negative, InvalidRequest")
    func replayFromTime() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            try await harness.post(ingest, key: key, (0..<5).map { logEvent("before-\($0)") })
            try await Task.sleep(for: .milliseconds(1100))
            let since = Date()
            try await Task.sleep(for: .milliseconds(100))
            try await harness.post(ingest, key: key, (0..<3).map { logEvent("after-\($0)") })
            try await harness.fanout().test(.live) { fanout in
                let client = StreamClient(port: try #require(fanout.port), token: try await harness.token())
                let (frames, _, _) = try await client.run(sending: [subscribe(extra: ["fromTime": since.milliseconds])]) {
                    ($0["seq"] as? Int) == 8
                }
                #expect(frames.seqs == [6, 7, 8], "\(frames)")
                // A time after every event: live from the present, nothing replayed.
                let (later, _, _) = try await client.run(sending: [subscribe(extra: ["fromTime": Date().milliseconds + 60_000])]) {
                    $0["type"] as? String == "subscribed"
                }
                #expect(later.last?["fromSeq"] as? Int == 9, "\(later)")
                for extra: [String: Any] in [["fromTime": since.milliseconds, "lastEventId": "3"], ["fromTime": -1]] {
                    let (refused, _, _) = try await client.run(sending: [subscribe(extra: extra)]) { $0["type"] as? String == "error" }
                    #expect((refused.last?["error"] as? [String: Any])?["code"] as? String == "InvalidRequest", "\(extra): \(refused)")
                }
            }
        }
    }

    @Test("batchEvents: several events per message, as a JSON array, still every seq once and in order")
    func batchEvents() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            try await harness.post(ingest, key: key, (0..<500).map { logEvent("b\($0)") })
            try await harness.fanout().test(.live) { fanout in
                let client = StreamClient(port: try #require(fanout.port), token: try await harness.token())
                async let received = client.run(sending: [subscribe(lastEventId: 0, extra: ["batchEvents": true, "maxEventsPerSecond": 10000])]) {
                    ($0["seq"] as? Int) == 700
                }
                for batch in 0..<4 {
                    try await harness.post(ingest, key: key, (0..<50).map { logEvent("l\(batch)-\($0)") })
                }
                let result = try await received
                #expect(result.frames.seqs == Array(1...700))
                // The replay of 500 went out in far fewer messages than events.
                #expect(result.messages < 400)
            }
        }
    }

    @Test("filters by swarm, agent, severity and kind; a tenant sees only its own events, even naming another's agents")
    func filtersAndTenancy() async throws {
        let harness = try await FanoutHarness()
        let other = "other-" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            let otherKey = try await harness.createKey(ingest, tenant: other)
            try await harness.fanout().test(.live) { fanout in
                let client = StreamClient(port: try #require(fanout.port), token: try await harness.token())
                let filters: [String: Any] = ["agentIds": ["a1", "theirs"], "severityGte": "warn", "include": ["logs"]]
                // From seq 0: whether the events come replayed or live does not matter here.
                async let received = client.run(sending: [subscribe(lastEventId: 0, filters: filters)]) { ($0["message"] as? String) == "last" }
                try await harness.post(ingest, key: otherKey, [logEvent("o1", agent: "theirs", level: "error", message: "not yours")])
                try await harness.post(
                    ingest,
                    key: key,
                    [
                        logEvent("e1", agent: "a1", level: "info", message: "too quiet"),
                        logEvent("e2", agent: "a2", level: "error", message: "other agent"),
                        logEvent("e3", agent: "a1", level: "error", message: "wanted 1"),
                        ["msgId": "e4", "swarmId": "s1", "agentId": "a1", "kind": "tool_call", "tool": "bash", "ok": false],
                        logEvent("e5", agent: "a1", level: "warn", message: "wanted 2"),
                        logEvent("e6", agent: "a1", level: "fatal", message: "last"),
                    ]
                )
                let frames = try await received.frames.events
                #expect(frames.map { $0["message"] as? String } == ["wanted 1", "wanted 2", "last"])
            }
        }
    }

    @Test("tools (seed 000's skill/tool filter): only tool calls of those tools, replayed from the log and live; more than 100 names refused")
    func toolFilter() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            @Sendable func call(_ id: String, _ tool: String, swarm: String = "s1") -> [String: Any] {
                ["msgId": id, "swarmId": swarm, "agentId": "a1", "kind": "tool_call", "tool": tool, "ok": true]
            }
            // An odd name (a quote, a backslash, a non-ASCII letter) as well as a plain one; a log
            // whose text names the tool is no tool call.
            let odd = #"sh "x" \ é"#
            try await harness.post(
                ingest,
                key: key,
                [
                    call("t1", "bash"), call("t2", "grep"), logEvent("t3", agent: "a1", message: #"tool "bash""#), call("t4", odd),
                    call("t5", "bash", swarm: "s2"),
                ]
            )
            // A tool call whose error holds a NUL (Postgres refuses such a frame as JSON): the
            // replay's filter reads bytes, not JSON, and goes on past it.
            try await harness.post(
                ingest,
                key: key,
                [["msgId": "t5b", "swarmId": "s1", "agentId": "a1", "kind": "tool_call", "tool": "grep", "ok": false, "error": "nul\u{0}here"]]
            )
            try await harness.fanout().test(.live) { fanout in
                let client = StreamClient(port: try #require(fanout.port), token: try await harness.token())
                let filters: [String: Any] = ["tools": ["bash", odd], "swarmIds": ["s1"]]
                // The first six come from the log (the filter in SQL), the last three live (in Swift).
                let subscribed = SubscribedFlag()
                async let received = client.run(sending: [subscribe(lastEventId: 0, filters: filters)]) { frame in
                    if frame["type"] as? String == "subscribed" { subscribed.value.withLock { $0 = true } }
                    return (frame["seq"] as? Int) == 9
                }
                #expect(await eventually { subscribed.value.withLock { $0 } })
                try await harness.post(ingest, key: key, [call("t6", "grep"), call("t7", "bash", swarm: "s2"), call("t8", "bash")])
                let frames = try await received.frames.events
                #expect(frames.map { $0["seq"] as? Int } == [1, 4, 9], "\(frames)")
                #expect(frames.map { $0["tool"] as? String } == ["bash", odd, "bash"])
                for tools: Any in [(0...100).map { "tool-\($0)" }, [""], [String(repeating: "x", count: 257)], "bash"] {
                    let (refused, _, _) = try await client.run(sending: [subscribe(filters: ["tools": tools])]) { $0["type"] as? String == "error" }
                    #expect((refused.last?["error"] as? [String: Any])?["code"] as? String == "InvalidRequest", "\(refused)")
                }
            }
        }
    }

    @Test("protocol: wrong version, bad token, missing scope, not an upgrade, malformed and unknown messages, oversized and flooding clients")
    func protocolErrors() async throws {
        let harness = try await FanoutHarness(fanout: ["FANOUT_MAX_MESSAGE_BYTES": "4096", "FANOUT_MAX_MESSAGES_PER_10S": "20"])
        try await harness.ingest().test(.router) { _ in  // ingest creates the event log
            try await harness.fanout().test(.live) { fanout in
                let port = try #require(fanout.port)
                let token = try await harness.token()

                var wrongVersion = StreamClient(port: port, token: token)
                wrongVersion.protocolVersion = "2"
                let mismatch = try await wrongVersion.run(sending: []) { _ in false }
                #expect((mismatch.frames.first?["error"] as? [String: Any])?["code"] as? String == "ProtocolMismatch")
                #expect(mismatch.close?.closeCode == .protocolError)

                for (token, status) in [
                    (nil, HTTPResponse.Status.unauthorized), ("garbage", .unauthorized), (try await harness.token(scopes: [.admin]), .forbidden),
                ] {
                    var headers: HTTPFields = [:]
                    if let token { headers[.authorization] = "Bearer \(token)" }
                    try await fanout.execute(uri: "/v1/stream?protocol=1", method: .get, headers: headers) { response in
                        #expect(response.status == status)
                        let envelope = try JSONDecoder().decode(ErrorEnvelope.self, from: Data(buffer: response.body))
                        #expect(envelope.error.code.httpStatus == Int(status.code))
                    }
                }
                try await fanout.execute(uri: "/v1/stream?protocol=1", method: .get, headers: [.authorization: "Bearer \(token)"]) { response in
                    #expect(response.status == .badRequest)
                }
                // A token in the URL is not read (it would be logged): 401, as with none.
                try await fanout.execute(uri: "/v1/stream?protocol=1&access_token=\(token)", method: .get) { response in
                    #expect(response.status == .unauthorized)
                }
                await #expect(throws: (any Error).self) {
                    _ = try await PlainWebSocket.connect(url: "ws://127.0.0.1:\(port)/v1/stream?protocol=1&access_token=\(token)") { _, _ in }
                }
                // A refused upgrade gets its status (and the envelope), so a client knows to refresh
                // its token rather than retry; a path with no WebSocket gets 404.
                for (path, token, status) in [
                    ("v1/stream", nil, "401"), ("v1/stream", "garbage", "401"), ("v1/stream", try await harness.token(scopes: [.admin]), "403"),
                    ("v1/acp", "garbage", "401"), ("v1/acp", try await harness.token(scopes: [.admin]), "403"), ("v1/elsewhere", token, "404"),
                ] {
                    do {
                        _ = try await PlainWebSocket.connect(url: "ws://127.0.0.1:\(port)/\(path)?protocol=1", bearer: token) { _, _ in }
                        Issue.record("\(path) upgraded")
                    } catch PlainWebSocket.ClientError.notUpgraded(let line) {
                        #expect(line.contains(" \(status) "), "\(path): \(line)")
                    }
                }
                // The refusal carries the request's correlation id (the client's, else a new one),
                // in its header and its envelope, as every HTTP answer does; so does a 101.
                // An id that is not 1-128 of [A-Za-z0-9._:-] is replaced by a new one.
                let cases: [(String, String?, String, Bool)] = [
                    ("v1/stream", "refused-1", "401", true), ("v1/elsewhere", nil, "404", false), ("v1/stream", "up-1", "101", true),
                    ("v1/stream", "not an id", "401", false),
                ]
                for (path, sent, status, kept) in cases {
                    let answer = try await Self.rawUpgrade(port: port, path: path, token: status == "101" ? token : nil, requestID: sent)
                    let lines = answer.components(separatedBy: "\r\n")
                    #expect(lines[0].hasPrefix("HTTP/1.1 \(status) "), "\(path): \(lines[0])")
                    let id = lines.first { $0.lowercased().hasPrefix("x-request-id: ") }.map { String($0.dropFirst(14)) }
                    #expect(id?.isEmpty == false, "\(path): \(answer)")
                    #expect((id == sent) == kept, "\(path): \(answer)")
                    if status != "101", let id { #expect(answer.contains(#""requestId":"\#(id)""#), "\(path): \(answer)") }
                }

                let client = StreamClient(port: port, token: token)
                let bad = try await client.run(sending: [
                    "{not json", #"{"type":"dance"}"#, #"{"type":"subscribe","filters":{"severityGte":"loud"}}"#, subscribe(),
                ]) {
                    $0["type"] as? String == "subscribed"
                }
                let errors = bad.frames.ofType("error").compactMap { ($0["error"] as? [String: Any])?["code"] as? String }
                #expect(errors == ["InvalidRequest", "InvalidRequest", "InvalidRequest"])
                #expect(bad.frames.last?["type"] as? String == "subscribed")

                let oversized = try await client.run(sending: [String(repeating: " ", count: 10_000)]) { _ in false }
                #expect(oversized.close?.closeCode == .messageTooLarge)

                let flood = try await client.run(sending: Array(repeating: subscribe(), count: 30)) { _ in false }
                #expect(flood.close?.closeCode == .policyViolation)

                try await fanout.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
            }
        }
    }

    @Test("a tenant holds at most fanout.max-connections-per-tenant connections; past it an error frame and close 1013; a freed slot is reused")
    func connectionsPerTenant() async throws {
        let harness = try await FanoutHarness(fanout: ["FANOUT_MAX_CONNECTIONS_PER_TENANT": "2", "FANOUT_PING_SECONDS": "1"])
        try await harness.ingest().test(.router) { _ in
            try await harness.fanout().test(.live) { fanout in
                let port = try #require(fanout.port)
                let token = try await harness.token()
                let done = Mutex(false)
                let subscribed = Mutex(0)
                let hold: @Sendable () async throws -> Void = {
                    _ = try await StreamClient(port: port, token: token).run(sending: [subscribe()], timeout: .seconds(30)) { frame in
                        if frame["type"] as? String == "subscribed" { subscribed.withLock { $0 += 1 } }
                        return done.withLock { $0 }
                    }
                }
                let first = Task { try await hold() }
                let second = Task { try await hold() }
                #expect(await eventually { subscribed.withLock { $0 } == 2 })

                let third = try await StreamClient(port: port, token: token).run(sending: [subscribe()]) { _ in false }
                #expect(third.close?.closeCode == .unknown(1013))
                #expect((third.frames.first?["error"] as? [String: Any])?["code"] as? String == "RateLimited")
                // Another tenant is not affected.
                let other = try await StreamClient(port: port, token: try await harness.token(tenant: "other-" + harness.tenant))
                    .run(sending: [subscribe()]) { $0["type"] as? String == "subscribed" }
                #expect(other.frames.last?["type"] as? String == "subscribed")

                done.withLock { $0 = true }
                try await first.value
                try await second.value
                // A slot is freed once the server has ended the connection, a moment after its
                // close reached the client: a client right then may still be refused.
                #expect(
                    await eventually {
                        let again = try? await StreamClient(port: port, token: token).run(sending: [subscribe()]) { _ in true }
                        return again?.frames.last?["type"] as? String == "subscribed"
                    }
                )
            }
        }
    }

    @Test(
        "connections dropped without a close, right after the upgrade or after subscribing, free their tenant's slots at once (not at the next ping)"
    )
    func droppedConnectionsFreeSlots() async throws {
        let harness = try await FanoutHarness(fanout: ["FANOUT_MAX_CONNECTIONS_PER_TENANT": "2", "FANOUT_PING_SECONDS": "120"])
        try await harness.ingest().test(.router) { _ in
            try await harness.fanout().test(.live) { fanout in
                let port = try #require(fanout.port)
                let token = try await harness.token()
                let url = "ws://127.0.0.1:\(port)/v1/stream?protocol=1"
                struct Dropped: Error {}
                for round in 0..<8 {
                    // Throwing from the handler closes the TCP connection without a close frame.
                    _ = try? await PlainWebSocket.connect(url: url, bearer: token) { inbound, outbound in
                        if round % 2 == 1 {
                            try await outbound.write(text: subscribe())
                            _ = try await inbound.next()
                        }
                        throw Dropped()
                    }
                }
                // Both slots are free: one client holds one while another subscribes.
                #expect(
                    await eventually {
                        let (release, releasing) = AsyncStream<Void>.makeStream()
                        let holding = Mutex(false)
                        let holder = Task {
                            try await PlainWebSocket.connect(url: url, bearer: token) { inbound, outbound in
                                try await outbound.write(text: subscribe())
                                while let message = try await inbound.next() {
                                    if case .text(let text) = message, text.contains(#""type":"subscribed""#) { break }
                                }
                                holding.withLock { $0 = true }
                                for await _ in release { break }
                            }
                        }
                        defer {
                            releasing.finish()
                            holder.cancel()
                        }
                        guard await eventually(timeout: .seconds(2), { holding.withLock { $0 } }) else { return false }
                        let second = try? await StreamClient(port: port, token: token).run(sending: [subscribe()]) {
                            $0["type"] as? String == "subscribed"
                        }
                        return second?.frames.last?["type"] as? String == "subscribed"
                    }
                )
            }
        }
    }

    @Test(
        "an envelope naming another tenant, published on this tenant's subject (alone or in a batch), is dropped: the real event of that seq is delivered",
        arguments: [false, true]
    )
    func otherTenantsEnvelopeDropped(inBatch: Bool) async throws {
        // No tail check within the test: the real event must come live, in ingest's batch.
        let harness = try await FanoutHarness(fanout: ["FANOUT_TAIL_CHECK_SECONDS": "3600"])
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            try await harness.post(ingest, key: key, [logEvent("first")])
            try await harness.fanout().test(.live) { fanout in
                let client = StreamClient(port: try #require(fanout.port), token: try await harness.token())
                async let received = client.run(sending: [subscribe(lastEventId: 1)]) { ($0["seq"] as? Int) == 2 }
                try await Task.sleep(for: .milliseconds(500))
                var forged = BusEventEnvelope()
                forged.tenantID = "someone-else"
                forged.seq = 2
                forged.swarmID = "s1"
                forged.agentID = "a1"
                forged.kind = .log
                forged.frame = Data(#"{"seq":2,"swarmId":"s1","agentId":"a1","kind":"log","message":"forged"}"#.utf8)
                let nats = try await TestEnvironment.connect()
                let subjects = try Subjects(prefix: harness.prefix)
                if inBatch {
                    var batch = BusEventBatch()
                    batch.events = [forged]
                    try nats.publish(try batch.serializedBytes() as [UInt8], to: subjects.eventBatch(tenant: harness.tenant))
                } else {
                    try nats.publish(
                        try forged.serializedBytes() as [UInt8],
                        to: subjects.event(tenant: harness.tenant, swarm: "s1", agent: "a1", kind: .log)
                    )
                }
                try await nats.flush(timeout: .seconds(5))
                await nats.close()
                try await Task.sleep(for: .milliseconds(300))
                try await harness.post(ingest, key: key, [logEvent("real", message: "real")])
                let frames = try await received.frames
                #expect(frames.events.map { $0["message"] as? String } == ["real"], "\(frames.events)")
            }
        }
    }

    @Test("a publish lost after commit is back-filled from the log, in order")
    func lostPublishBackfilled() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            try await harness.post(ingest, key: key, [logEvent("before")])
            // The same log, publishing where this fanout does not listen: commits whose publish is lost.
            try await harness.ingest(prefix: "lost" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)).test(.router) { silent in
                try await harness.fanout().test(.live) { fanout in
                    let client = StreamClient(port: try #require(fanout.port), token: try await harness.token())
                    async let received = client.run(sending: [subscribe(lastEventId: 1)]) { ($0["seq"] as? Int) == 7 }
                    try await harness.post(silent, key: key, (0..<5).map { logEvent("silent-\($0)") })
                    try await harness.post(ingest, key: key, [logEvent("heard", message: "heard")])
                    let frames = try await received.frames
                    #expect(frames.seqs == Array(2...7))
                    #expect(frames.events.last?["message"] as? String == "heard")
                }
            }
        }
    }

    @Test("a publish lost at the end of a burst (no later event to reveal it) is back-filled by the tail check")
    func lostTailBackfilled() async throws {
        let harness = try await FanoutHarness(fanout: ["FANOUT_TAIL_CHECK_SECONDS": "1"])
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            try await harness.post(ingest, key: key, [logEvent("first")])
            try await harness.ingest(prefix: "lost" + String(UInt64.random(in: 0..<UInt64.max), radix: 36)).test(.router) { silent in
                try await harness.fanout().test(.live) { fanout in
                    let client = StreamClient(port: try #require(fanout.port), token: try await harness.token())
                    let live = Counted()
                    async let received = client.run(sending: [subscribe(lastEventId: 0)]) { frame in
                        if (frame["seq"] as? Int) == 1 { _ = live.next() }
                        return (frame["seq"] as? Int) == 4
                    }
                    // Once the client is live (it has seq 1), commit three events whose publish is lost.
                    #expect(await eventually { live.value > 0 })
                    try await harness.post(silent, key: key, (0..<3).map { logEvent("silent-\($0)") })
                    #expect(try await received.frames.seqs == [1, 2, 3, 4])
                }
            }
        }
    }

    @Test("collapseRepeats: an agent's identical log lines become one line and a suppressed count, never silently")
    func collapseRepeats() async throws {
        let harness = try await FanoutHarness()
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            try await harness.fanout().test(.live) { fanout in
                let client = StreamClient(port: try #require(fanout.port), token: try await harness.token())
                let ready = Counted()
                async let received = client.run(sending: [subscribe(extra: ["collapseRepeats": true])]) { frame in
                    if frame["type"] as? String == "subscribed" { _ = ready.next() }
                    return frame["type"] as? String == "suppressed" && frame["toSeq"] as? Int == 10
                }
                #expect(await eventually { ready.value > 0 })
                var events = (0..<5).map { logEvent("d\($0)", agent: "a1", message: "disk full") }
                events += [logEvent("r", agent: "a1", message: "recovered"), logEvent("x", agent: "a2", message: "disk full")]
                events += (0..<3).map { logEvent("s\($0)", agent: "a1", message: "spam \"quoted\"") }
                try await harness.post(ingest, key: key, events)
                let frames = try await received.frames.filter { $0["type"] as? String != "subscribed" }
                #expect(
                    frames.map { $0["message"] as? String ?? "count \($0["count"] as? Int ?? -1)" } == [
                        "disk full", "count 4", "recovered", "disk full", "spam \"quoted\"", "count 2",
                    ]
                )
                let notice = try #require(frames.first { $0["type"] as? String == "suppressed" })
                #expect(notice["fromSeq"] as? Int == 2)
                #expect(notice["toSeq"] as? Int == 5)
                #expect(notice["agentId"] as? String == "a1")
            }
        }
    }

    @Test(
        "a client that stops reading: its queue stays bounded, it catches up from the log or gets a gap notice, never silent loss; a fast client meanwhile gets everything"
    )
    func slowClient() async throws {
        // A catch-up of up to 2000 events; the slow client, 10 s behind, goes past it.
        let harness = try await FanoutHarness(fanout: ["FANOUT_QUEUE_EVENTS": "16", "FANOUT_MAX_CATCH_UP_EVENTS": "2000"])
        try await harness.ingest().test(.router) { ingest in
            let key = try await harness.createKey(ingest)
            try await harness.fanout().test(.live) { fanout in
                let port = try #require(fanout.port)
                let token = try await harness.token()
                let catchUpsBefore = try await Self.metric("fanout_catch_ups_total", fanout)
                let body = String(repeating: "x", count: 4000)
                let total = 4000
                var slow = StreamClient(port: port, token: token)
                slow.readDelay = .seconds(10)
                let fast = StreamClient(port: port, token: token)
                // Both stop at the last event, or at a gap notice that reaches it.
                let done: @Sendable ([String: Any]) -> Bool = { frame in
                    (frame["seq"] as? Int) == total || ((frame["type"] as? String) == "gap" && (frame["toSeq"] as? Int ?? 0) >= total)
                }
                async let slowFrames = slow.run(
                    sending: [subscribe(lastEventId: 0, extra: ["maxEventsPerSecond": 10000])],
                    timeout: .seconds(90),
                    until: done
                )
                // A client that falls too far behind gets a `slow_consumer` gap and resumes from
                // its last event, as the protocol tells it to: on two busy cores even the fast one
                // can (ingest in this process writes faster than the test's client parses).
                async let fastSeqs: [Int64] = {
                    var seqs: [Int64] = []
                    for _ in 0..<50 {
                        let frames = try await fast.run(
                            sending: [subscribe(lastEventId: seqs.last ?? 0, extra: ["maxEventsPerSecond": 10000])],
                            timeout: .seconds(90)
                        ) { frame in
                            (frame["seq"] as? Int) == total || (frame["reason"] as? String) == "slow_consumer"
                        }.frames
                        seqs += frames.seqs
                        guard seqs.last != Int64(total), frames.last?["reason"] as? String == "slow_consumer" else { break }
                    }
                    return seqs
                }()
                for batch in 0..<(total / 100) {
                    try await harness.post(ingest, key: key, (0..<100).map { logEvent("s-\(batch)-\($0)", message: body) })
                }
                #expect(try await fastSeqs == Array(1...Int64(total)))
                let slowResult = try await slowFrames.frames
                // Every seq is either delivered or inside a gap notice, and none twice.
                var covered = Set(slowResult.seqs)
                #expect(covered.count == slowResult.seqs.count)
                for gap in slowResult.ofType("gap") {
                    let from = (gap["fromSeq"] as? NSNumber)?.int64Value ?? 0
                    let to = (gap["toSeq"] as? NSNumber)?.int64Value ?? -1
                    for seq in from...max(from, to) where to >= from { covered.insert(seq) }
                }
                #expect(covered == Set(1...Int64(total)))
                #expect(slowResult.seqs == slowResult.seqs.sorted())
                // Its queue did overflow (so this tested the catch-up, not just a big socket buffer).
                #expect(try await Self.metric("fanout_catch_ups_total", fanout) > catchUpsBefore)
            }
        }
    }

    @Test("a client that never answers pings is disconnected; one that does stays")
    func deadPeer() async throws {
        let harness = try await FanoutHarness(fanout: ["FANOUT_PING_SECONDS": "1"])
        try await harness.ingest().test(.router) { _ in
            try await harness.fanout().test(.live) { fanout in
                let port = try #require(fanout.port)
                var silent = StreamClient(port: port, token: try await harness.token())
                silent.answerPings = false
                let started = ContinuousClock.now
                let dropped = try await silent.run(sending: [subscribe()], timeout: .seconds(15)) { _ in false }
                #expect(dropped.close?.closeCode == .goingAway)
                #expect(dropped.frames.ofType("ping").count >= 1)
                #expect(ContinuousClock.now - started < .seconds(10))

                let alive = StreamClient(port: port, token: try await harness.token())
                let pings = Counted()
                let kept = try await alive.run(sending: [subscribe()], timeout: .seconds(15)) { frame in
                    frame["type"] as? String == "ping" && pings.next() >= 4
                }
                // Still open after four pings; the client closed it (normally).
                #expect(kept.frames.ofType("ping").count == 4)
                #expect(kept.close?.closeCode == .normalClosure)
            }
        }
    }
}

final class Counted: Sendable {
    private let count = Mutex(0)

    var value: Int { self.count.withLock { $0 } }

    func next() -> Int {
        self.count.withLock {
            $0 += 1
            return $0
        }
    }
}

/// Set once a subscription's `subscribed` frame arrives.
final class SubscribedFlag: Sendable {
    let value = Mutex(false)
}
