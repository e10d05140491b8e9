import Contracts
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import ServiceHarnesses
import ServiceKit
import StreamTestSupport
import TestSupport
import Testing

/// Seed 004's phone (OpenAgents' Autopilot iOS client) against control-api: its requests as its
/// `RuntimeCodexClient` sends them (paths, bodies, `X-Request-Id`), its answers decoded into
/// its `RuntimeCodexModels` types as they declare them, its error classes read from the status
/// as its `mapResponseError` reads them; a real worker under the connector (live).
@Suite("Seed 004's worker admin: the seed's client against a real worker, ownership per principal (live)")
struct Seed004ContractTests {
    typealias H = ControlHarness

    /// The client's `DataResponse<T>`.
    struct DataResponse<T: Decodable>: Decodable {
        var data: T?
    }

    /// The client's `RuntimeCodexWorkerSummary` (its required fields required).
    struct WorkerSummary: Decodable {
        var workerID: String
        var status: String
        var latestSeq: Int
        var workspaceRef: String?
        var codexHomeRef: String?
        var adapter: String
        var heartbeatState: String?
        var lastHeartbeatAt: String?
        var metadata: [String: String]?

        enum CodingKeys: String, CodingKey {
            case workerID = "worker_id"
            case status
            case latestSeq = "latest_seq"
            case workspaceRef = "workspace_ref"
            case codexHomeRef = "codex_home_ref"
            case adapter
            case heartbeatState = "heartbeat_state"
            case lastHeartbeatAt = "last_heartbeat_at"
            case metadata
        }
    }

    /// The client's `WorkerCreateRequest` (`upsertWorkerMetadata`).
    struct WorkerCreateRequest: Encodable {
        var workerID: String
        var workspaceRef: String?
        var codexHomeRef: String?
        var adapter: String?
        var metadata: [String: String]

        enum CodingKeys: String, CodingKey {
            case workerID = "worker_id"
            case workspaceRef = "workspace_ref"
            case codexHomeRef = "codex_home_ref"
            case adapter
            case metadata
        }
    }

    /// The client's `RuntimeCodexWorkerActionRequest`, params as the client builds them.
    struct ActionRequest: Encodable {
        var requestID: String
        var method: String
        var params: [String: [[String: String]]]
        var requestVersion: String? = "v1"
        var source: String? = "autopilot-ios"

        enum CodingKeys: String, CodingKey {
            case requestID = "request_id"
            case method
            case params
            case requestVersion = "request_version"
            case source
        }
    }

    /// The client's `WorkerActionRequestEnvelope`.
    struct ActionEnvelope: Encodable {
        var request: ActionRequest
    }

    /// The client's `RuntimeCodexWorkerActionResult`.
    struct ActionResult: Decodable {
        var workerID: String?
        var requestID: String?
        var ok: Bool?
        var method: String?
        var status: String?

        enum CodingKeys: String, CodingKey {
            case workerID = "worker_id"
            case requestID = "request_id"
            case ok
            case method
            case status
        }
    }

    /// The client's `RuntimeCodexWorkerStopResult`.
    struct StopResult: Decodable {
        var workerID: String?
        var status: String?
        var idempotentReplay: Bool?

        enum CodingKeys: String, CodingKey {
            case workerID = "worker_id"
            case status
            case idempotentReplay = "idempotent_replay"
        }
    }

    /// The client's `RuntimeCodexApiErrorCode`, from the status as `mapResponseError` maps it.
    static func errorClass(_ status: HTTPResponse.Status) -> String {
        switch status.code {
        case 401: "auth"
        case 403: "forbidden"
        case 409: "conflict"
        case 400, 422: "invalid"
        default: "unknown"
        }
    }

    struct Answer {
        var status: HTTPResponse.Status
        var body: Data
        var headers: HTTPFields
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: self.body)) as? [String: Any] ?? [:] }
        /// The envelope's `class`, which must agree with what the seed's client reads from the status.
        var errorClass: String? { (self.json["error"] as? [String: Any])?["class"] as? String }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try JSONDecoder().decode(DataResponse<T>.self, from: self.body).data.unwrap("no data in \(String(decoding: self.body, as: UTF8.self))")
        }
    }

    /// One call as the seed's `requestJSON` makes it: `Accept` and, with a body, `Content-Type`.
    static func call(
        _ client: any TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        token: String,
        body: some Encodable,
        headers extra: HTTPFields = [:]
    ) async throws -> Answer {
        var headers = extra
        headers[.contentType] = "application/json"
        return try await Self.call(client, method, uri, token: token, encoded: ByteBuffer(bytes: try JSONEncoder().encode(body)), headers: headers)
    }

    static func call(
        _ client: any TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        token: String,
        encoded body: ByteBuffer? = nil,
        headers extra: HTTPFields = [:]
    ) async throws -> Answer {
        var headers = extra
        headers[.authorization] = "Bearer \(token)"
        headers[.accept] = "application/json"
        return try await client.execute(uri: uri, method: method, headers: headers, body: body) { response in
            Answer(status: response.status, body: Data(buffer: response.body), headers: response.headers)
        }
    }

    @Test(
        "list, register, request and stop as the seed's client does, against a real worker; another principal gets 403, another tenant 404, an admin sees all"
    )
    func workerAdmin() async throws {
        let harness = try await ControlHarness(["CONTROL_OFFLINE_SECONDS": "30"])
        let worker = "w-" + String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        let path = "/api/runtime/codex/workers/\(worker)"
        try await harness.runWithStream { ingest, control, fanout in
            let key = try await harness.createKey(ingest)
            let operatorScopes: Set<Scope> = [.streamRead, .agentsControl]
            let ana = try await harness.token(subject: "ana", scopes: operatorScopes)
            let ben = try await harness.token(subject: "ben", scopes: operatorScopes)
            let root = try await harness.token(subject: "root")
            let theirs = try await harness.token(tenant: "other-" + harness.tenant, subject: "ana", scopes: operatorScopes)
            // `read -r`: the line as sent, its JSON escapes untouched.
            let connector = try ControlEndToEndTests.connector(
                ingestPort: try #require(ingest.port),
                controlPort: try #require(control.port),
                key: key,
                agent: worker,
                worker: true,
                ["sh", "-c", #"while IFS= read -r line; do printf 'worker got: %s\n' "$line"; done"#]
            )
            defer { ControlEndToEndTests.stop(connector) }

            // Listed to everyone in the tenant while nobody has registered it.
            var summary: WorkerSummary?
            let listed = try await eventually(timeout: .seconds(20)) {
                let answer = try await Self.call(control, .get, "/api/runtime/codex/workers?limit=100", token: ana)
                summary = try answer.decode([WorkerSummary].self).first { $0.workerID == worker && $0.status == "running" }
                return summary != nil
            }
            #expect(listed)
            #expect(summary?.adapter == "swarmdeck-connector" && (summary?.latestSeq ?? 0) > 0 && summary?.heartbeatState == "fresh")
            #expect(try await Self.call(control, .get, path, token: ben).status == .ok)

            // Ana registers it (201), then updates it (200); Ben cannot take it.
            let create = WorkerCreateRequest(workerID: worker, workspaceRef: "repo-a", adapter: "codex-app-server", metadata: ["team": "infra"])
            let created = try await Self.call(control, .post, "/api/runtime/codex/workers", token: ana, body: create)
            #expect(created.status == .created)
            #expect(try created.decode(WorkerSummary.self).metadata == ["team": "infra"])
            var update = create
            update.codexHomeRef = "home-a"
            update.metadata = ["team": "core"]
            let updated = try await Self.call(control, .post, "/api/runtime/codex/workers", token: ana, body: update)
            #expect(updated.status == .ok)
            let snapshot = try await Self.call(control, .get, path, token: ana).decode(WorkerSummary.self)
            #expect(snapshot.workspaceRef == "repo-a" && snapshot.codexHomeRef == "home-a" && snapshot.adapter == "codex-app-server")
            #expect(snapshot.metadata == ["team": "core"] && snapshot.status == "running")
            let stolen = try await Self.call(control, .post, "/api/runtime/codex/workers", token: ben, body: create)
            #expect(stolen.status == .forbidden && stolen.errorClass == "forbidden" && Self.errorClass(stolen.status) == "forbidden")

            // Ben: not listed, and every operation on it is forbidden, on both surfaces.
            let bens = try await Self.call(control, .get, "/api/runtime/codex/workers", token: ben).decode([WorkerSummary].self)
            #expect(!bens.contains { $0.workerID == worker })
            let request = ActionEnvelope(
                request: ActionRequest(requestID: "r-\(worker)", method: "turn/start", params: ["input": [["type": "text", "text": "hi there"]]])
            )
            for answer in [
                try await Self.call(control, .get, path, token: ben),
                try await Self.call(control, .post, path + "/requests", token: ben, body: request),
                try await Self.call(control, .post, path + "/stop", token: ben),
                try await Self.call(control, .delete, path, token: ben),
                try await Self.call(control, .get, "/v1/workers/\(worker)", token: ben),
                try await Self.call(control, .post, "/v1/workers/\(worker)/stop", token: ben, body: ["requestId": "b1", "reason": "x"]),
            ] {
                #expect(answer.status == .forbidden && answer.errorClass == "forbidden", "\(answer.status) \(answer.json)")
            }
            let bensV1 = try await Self.call(control, .get, "/v1/workers", token: ben).json["workers"] as? [[String: Any]]
            #expect(bensV1?.contains { $0["id"] as? String == worker } == false)
            // An admin sees it, with its owner; another tenant does not know it.
            let all = try await Self.call(control, .get, "/api/runtime/codex/workers", token: root)
            #expect((all.json["data"] as? [[String: Any]])?.first { $0["worker_id"] as? String == worker }?["owner"] as? String == "ana")
            #expect(try await Self.call(control, .get, path, token: theirs).status == .notFound)
            #expect(try await Self.call(control, .post, path + "/stop", token: theirs).status == .notFound)

            // The request reaches the worker as its JSON-RPC line; its answer is on the stream.
            let expected = #"worker got: {"id":"r-\#(worker)","method":"turn/start","params":{"input":[{"text":"hi there","type":"text"}]}}"#
            let answered = ControlEndToEndTests.Seen()
            let stream = StreamClient(port: try #require(fanout.port), token: ana)
            async let frames = stream.run(
                sending: [subscribe(filters: ["agentIds": [worker], "include": ["logs"]])],
                timeout: .seconds(60)
            ) { frame in
                if frame["type"] as? String == "subscribed" { answered.subscribed.withLock { $0 = true } }
                return frame["message"] as? String == expected
            }
            #expect(await eventually { answered.subscribed.withLock { $0 } })
            let correlation: HTTPFields = [HTTPField.Name("x-request-id")!: "r-\(worker)"]
            let sent = try await Self.call(control, .post, path + "/requests", token: ana, body: request, headers: correlation)
            #expect(sent.status == .accepted, "\(sent.json)")
            #expect(sent.headers[HTTPField.Name("x-request-id")!] == "r-\(worker)")
            let result = try sent.decode(ActionResult.self)
            #expect(result.ok == true && result.workerID == worker && result.requestID == "r-\(worker)" && result.method == "turn/start")
            #expect((sent.json["data"] as? [String: Any])?["idempotent_replay"] as? Bool == false)
            #expect(try await frames.frames.contains { $0["message"] as? String == expected })
            // A retry is the same request; the same id for another request is a conflict.
            let retried = try await Self.call(control, .post, path + "/requests", token: ana, body: request)
            #expect(retried.status == .accepted && (retried.json["data"] as? [String: Any])?["idempotent_replay"] as? Bool == true)
            #expect(
                (retried.json["data"] as? [String: Any])?["command_id"] as? String == (sent.json["data"] as? [String: Any])?["command_id"] as? String
            )
            var other = request
            other.request.params = ["input": [["type": "text", "text": "something else"]]]
            let reused = try await Self.call(control, .post, path + "/requests", token: ana, body: other)
            #expect(reused.status == .conflict && reused.errorClass == "conflict")

            // Stop without a body; once it has stopped, a stop is answered as done and a request is a conflict.
            let stopping = try await Self.call(control, .post, path + "/stop", token: ana)
            #expect(stopping.status == .accepted, "\(stopping.json)")
            #expect(try stopping.decode(StopResult.self).status == "stopping")
            try await ControlEndToEndTests.waitForExit(connector)
            #expect(try await Self.call(control, .post, path + "/stop", token: ana).status == .ok)
            let again = try await Self.call(control, .post, path + "/stop", token: ana, body: ["reason": "again"])
            let done = try again.decode(StopResult.self)
            #expect(again.status == .ok && done.status == "stopped" && done.idempotentReplay == true && done.workerID == worker)
            var late = request
            late.request.requestID = "late-\(worker)"
            let refused = try await Self.call(control, .post, path + "/requests", token: ana, body: late)
            #expect(refused.status == .conflict && refused.errorClass == "conflict")

            // Released, it is the tenant's again.
            #expect(try await Self.call(control, .delete, path, token: ana).status == .noContent)
            #expect(try await Self.call(control, .get, path, token: ben).status == .ok)
            #expect(try await Self.call(control, .delete, path, token: ana).status == .notFound)
        }
    }

    @Test("a revoked device's registrations are released: its workers are the tenant's again")
    func revokedDeviceReleases() async throws {
        let harness = try await ControlHarness()
        try await harness.run { _, control in
            let admin = try await harness.token(subject: "root", scopes: [.admin])
            let codes = try await ControlAuthTests.codes(control, harness, scopes: ["stream:read", "agents:control"])
            let (_, pair) = try await H.call(control, .post, "/v1/auth/device/register", json: ["code": codes[0], "deviceName": "phone"])
            let phone = try #require(pair["accessToken"] as? String)
            let device = try #require(pair["deviceId"] as? String)
            let registered = try await Self.call(
                control,
                .post,
                "/api/runtime/codex/workers",
                token: phone,
                body: WorkerCreateRequest(workerID: "kept", metadata: [:])
            )
            #expect(registered.status == .created && (registered.json["data"] as? [String: Any])?["owner"] as? String == device)
            let ben = try await harness.token(subject: "ben", scopes: [.streamRead, .agentsControl])
            #expect(try await Self.call(control, .get, "/api/runtime/codex/workers/kept", token: ben).status == .forbidden)
            #expect(try await H.call(control, .post, "/v1/admin/devices/\(device)/revoke", token: admin).0 == .ok)
            let released = try await Self.call(control, .get, "/api/runtime/codex/workers/kept", token: ben)
            // Registered, never seen, nobody's: no row is left to show, so it is gone.
            #expect(released.status == .notFound, "\(released.json)")
        }
    }

    @Test("one principal holds at most control.max-registered-workers-per-principal: past it 409, and the others still register")
    func perPrincipal() async throws {
        let harness = try await ControlHarness(["CONTROL_MAX_REGISTERED_WORKERS_PER_PRINCIPAL": "1"])
        try await harness.run { _, control in
            let ana = try await harness.token(subject: "ana", scopes: [.streamRead, .agentsControl])
            let ben = try await harness.token(subject: "ben", scopes: [.streamRead, .agentsControl])
            func register(_ token: String, _ id: String) async throws -> Answer {
                try await Self.call(
                    control,
                    .post,
                    "/api/runtime/codex/workers",
                    token: token,
                    body: WorkerCreateRequest(workerID: id, metadata: [:])
                )
            }
            #expect(try await register(ana, "a1").status == .created)
            let second = try await register(ana, "a2")
            #expect(second.status == .conflict && second.errorClass == "conflict", "\(second.json)")
            #expect(((second.json["error"] as? [String: Any])?["message"] as? String)?.contains("per-principal") == true)
            #expect(try await register(ana, "a1").status == .ok)  // an update is no new registration
            #expect(try await register(ben, "b1").status == .created)
            #expect(try await Self.call(control, .delete, "/api/runtime/codex/workers/a1", token: ana).status == .noContent)
            #expect(try await register(ana, "a2").status == .created)
        }
    }

    @Test("limits and bad input: registrations per tenant, metadata, the list's limit and status, ids; a worker registered but not started")
    func limits() async throws {
        let harness = try await ControlHarness(["CONTROL_MAX_REGISTERED_WORKERS": "2"])
        try await harness.run { ingest, control in
            let ana = try await harness.token(subject: "ana", scopes: [.streamRead, .agentsControl])
            let reader = try await harness.token(subject: "viewer", scopes: [.streamRead])
            let register = { (id: String, metadata: [String: String]) in
                try await Self.call(
                    control,
                    .post,
                    "/api/runtime/codex/workers",
                    token: ana,
                    body: WorkerCreateRequest(workerID: id, metadata: metadata)
                )
            }
            #expect(try await register("one", [:]).status == .created)
            #expect(try await register("two", [:]).status == .created)
            let third = try await register("three", [:])
            #expect(third.status == .conflict && third.errorClass == "conflict", "\(third.json)")
            // Updating one already registered is no new registration.
            #expect(try await register("two", ["k": "v"]).status == .ok)
            let big = try await register("two", ["k": String(repeating: "m", count: 9000)])
            #expect(big.status == .badRequest && big.errorClass == "invalid")
            let nul = try await register("two", ["k": "a\u{0}b"])
            #expect(nul.status == .badRequest)
            #expect(try await register("bad\u{1}id", [:]).status == .badRequest)
            #expect(try await register(String(repeating: "x", count: 300), [:]).status == .badRequest)
            // The scope: a reader lists but does not register.
            let denied = try await Self.call(
                control,
                .post,
                "/api/runtime/codex/workers",
                token: reader,
                body: WorkerCreateRequest(workerID: "four", metadata: [:])
            )
            #expect(denied.status == .forbidden && denied.errorClass == "forbidden")
            for query in ["limit=0", "limit=201", "limit=x", "status=sleeping"] {
                let answer = try await Self.call(control, .get, "/api/runtime/codex/workers?\(query)", token: reader)
                #expect(answer.status == .badRequest, "\(query): \(answer.status)")
            }
            let registered = try await Self.call(control, .get, "/api/runtime/codex/workers?status=registered&limit=1", token: ana)
            #expect(try registered.decode([WorkerSummary].self).map(\.status) == ["registered"])
            // Another principal does not see Ana's.
            let others = try await Self.call(control, .get, "/api/runtime/codex/workers?status=registered", token: reader)
            #expect(try others.decode([WorkerSummary].self).isEmpty)
            // Registered, never started: readable, but a request or a stop has nowhere to go.
            let one = try await Self.call(control, .get, "/api/runtime/codex/workers/one", token: ana).decode(WorkerSummary.self)
            #expect(one.status == "registered" && one.latestSeq == 0 && one.heartbeatState == nil)
            let request = ActionEnvelope(request: ActionRequest(requestID: "q1", method: "thread/list", params: [:]))
            #expect(try await Self.call(control, .post, "/api/runtime/codex/workers/one/requests", token: ana, body: request).status == .conflict)
            #expect(try await Self.call(control, .post, "/api/runtime/codex/workers/one/stop", token: ana).status == .conflict)
            // A method outside the seed's list, a body without a request: 400.
            let unknown = try await Self.call(
                control,
                .post,
                "/api/runtime/codex/workers/one/requests",
                token: ana,
                body: ["request": ["request_id": "q2", "method": "thread/delete"]]
            )
            #expect(unknown.status == .badRequest && unknown.errorClass == "invalid")
            #expect(
                try await Self.call(control, .post, "/api/runtime/codex/workers/one/requests", token: ana, body: [String: String]()).status
                    == .badRequest
            )
            #expect(try await Self.call(control, .get, "/api/runtime/codex/workers/nobody", token: ana).status == .notFound)
            #expect(try await Self.call(control, .delete, "/api/runtime/codex/workers/nobody", token: ana).status == .notFound)
            // A body without Content-Type is read as JSON; one over control-api's request limit
            // (64 KiB, before NoBodyMiddleware's 1 MiB) is 413.
            let untyped = try await Self.call(
                control,
                .post,
                "/api/runtime/codex/workers",
                token: ana,
                encoded: ByteBuffer(string: #"{"worker_id": "one", "adapter": "untyped"}"#)
            )
            #expect(untyped.status == .ok, "\(untyped.json)")
            #expect(try untyped.decode(WorkerSummary.self).adapter == "untyped")
            let huge = try await Self.call(
                control,
                .post,
                "/api/runtime/codex/workers/one/stop",
                token: ana,
                encoded: ByteBuffer(repeating: UInt8(ascii: " "), count: (1 << 20) + 1)
            )
            #expect(huge.status == .contentTooLarge && huge.errorClass == "invalid")
            // One spelling per worker: an id that is not Unicode NFC is refused for a worker the
            // fleet does not know; a worker it knows is found and checked under its own spelling
            // whatever spelling the request uses.
            let nfd = "cafe\u{301}-w"
            #expect(try await register(nfd, [:]).status == .badRequest)
            try await harness.post(
                ingest,
                key: try await harness.createKey(ingest),
                [["msgId": "caf", "swarmId": "s", "agentId": "caf\u{E9}-w", "kind": "state", "state": "running", "attrs": ["worker": true]]]
            )
            #expect(await eventually { (try? await Self.call(control, .get, "/api/runtime/codex/workers/caf%C3%A9-w", token: ana).status) == .ok })
            #expect(try await Self.call(control, .delete, "/api/runtime/codex/workers/one", token: ana).status == .noContent)
            #expect(try await register(nfd, [:]).status == .created)  // the fleet's worker, by its NFC spelling
            let viaOtherSpelling = try await Self.call(control, .get, "/api/runtime/codex/workers/cafe%CC%81-w", token: reader)
            #expect(viaOtherSpelling.status == .forbidden, "\(viaOtherSpelling.json)")
            #expect(try await Self.call(control, .get, "/v1/workers/cafe%CC%81-w", token: reader).status == .forbidden)
            // No token: auth.
            let anonymous = try await control.execute(uri: "/api/runtime/codex/workers", method: .get) { $0.status }
            #expect(anonymous == .unauthorized && Self.errorClass(anonymous) == "auth")
        }
    }
}

extension Optional {
    fileprivate func unwrap(_ message: @autoclosure () -> String) throws -> Wrapped {
        guard let self else { throw UnwrapError(message: message()) }
        return self
    }
}

private struct UnwrapError: Error {
    var message: String
}
