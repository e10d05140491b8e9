import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

@testable import Approvals

@Suite("ACP: a session/request_permission on a thread opens a gate; its decision is the JSON-RPC result on the thread (live)")
struct ACPGateTests {
    typealias H = ApprovalsHarness

    static let request = #"""
        {"jsonrpc":"2.0","id":5,"method":"session/request_permission","params":{"sessionId":"sess_abc","toolCall":{"toolCallId":"call_001","title":"rm -rf build","kind":"delete","rawInput":{"command":"rm -rf build","token":"hunter2"}},"options":[{"optionId":"allow-once","name":"Allow once","kind":"allow_once"},{"optionId":"reject-once","name":"Reject","kind":"reject_once"}]}}
        """#

    /// Posts an ACP message to `thread` through ingest's HTTP API.
    static func post(_ ingest: any TestClientProtocol, key: String, thread: String, msgID: String, body: String) async throws {
        let uri = "/v1/ingest/acp/\(thread)?swarmId=s1&agentId=a1&direction=agent_to_client&msgId=\(msgID)&sessionId=sess_abc"
        let (status, answer) = try await LiveCall.retryingUnavailable { try await LiveCall.call(ingest, .post, uri, token: key, body: body) }
        #expect(status == .ok, "\(answer)")
    }

    /// The thread's messages from `client_to_agent`, as stored (the bodies, byte for byte).
    static func answers(_ harness: ApprovalsHarness, thread: String) async throws -> [String] {
        var configuration = try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 1)
        configuration.options.additionalStartupParameters = [("search_path", harness.live.ingestSchema)]
        let client = PostgresClient(configuration: configuration)
        let running = Task { await client.run() }
        defer { running.cancel() }
        let rows = try await client.query(
            "SELECT body FROM acp_envelopes WHERE tenant_id = \(harness.tenant) AND thread_id = \(thread) AND direction = 2 ORDER BY thread_seq"
        )
        var bodies: [String] = []
        for try await body in rows.decode(ByteBuffer.self) { bodies.append(String(buffer: body)) }
        return bodies
    }

    /// The pending gate opened from `thread`, once listed.
    static func gate(_ approvals: any TestClientProtocol, token: String) async throws -> [String: Any] {
        var found: [String: Any]?
        let listed = await eventually(timeout: .seconds(15)) {
            let (_, page) = (try? await LiveCall.call(approvals, .get, "/v1/approval-gates", token: token)) ?? (.ok, [:])
            found = (page["gates"] as? [[String: Any]])?.first
            return found != nil
        }
        try #require(listed, "no gate was opened from the permission request")
        return found!
    }

    @Test(
        "request → gate (title, options, redacted input) → an unoffered option refused → allow-once: the result with id 5 on the thread, byte for byte"
    )
    func decided() async throws {
        let harness = try await ApprovalsHarness()
        try await harness.run { ingest, _, approvals in
            let key = try await harness.live.createKey(ingest)
            let phone = try await harness.token()
            try await Self.post(ingest, key: key, thread: "t1", msgID: "m1", body: Self.request)
            let gate = try await Self.gate(approvals, token: phone)
            let id = try #require(gate["gateId"] as? String)
            #expect(gate["summary"] as? String == "rm -rf build")
            #expect(gate["tool"] as? String == "delete")
            let (_, detail) = try await LiveCall.call(approvals, .get, "/v1/approval-gates/\(id)", token: phone)
            #expect(detail["source"] as? String == "acp")
            #expect((detail["options"] as? [[String: Any]])?.map { $0["optionId"] as? String } == ["allow-once", "reject-once"])
            #expect((detail["toolInput"] as? [String: Any])?["token"] as? String == "[redacted]")
            // The same request again (a retry: the same msgId) opens nothing new. (The same bytes
            // posted anew are another request, of a later agent process maybe: another gate.)
            try await Self.post(ingest, key: key, thread: "t1", msgID: "m1", body: Self.request)
            let uri = "/v1/approval-gates/\(id)/decision"
            #expect(
                try await LiveCall.call(approvals, .post, uri, token: phone, json: ["decision": "approve", "optionId": "allow-always"]).0
                    == .badRequest
            )
            #expect(try await LiveCall.call(approvals, .post, uri, token: phone, json: ["decision": "approve", "optionId": "allow-once"]).0 == .ok)
            let answered = await eventually(timeout: .seconds(15)) { (try? await Self.answers(harness, thread: "t1"))?.isEmpty == false }
            #expect(answered)
            #expect(
                try await Self.answers(harness, thread: "t1") == [
                    #"{"jsonrpc":"2.0","id":5,"result":{"outcome":{"outcome":"selected","optionId":"allow-once"}}}"#
                ]
            )
            let (_, all) = try await LiveCall.call(approvals, .get, "/v1/approval-gates?status=all", token: phone)
            #expect((all["gates"] as? [Any])?.count == 1)
        }
    }

    @Test("a rejection answers its reject option; an expired request is answered cancelled; string ids come back as strings")
    func rejectedAndExpired() async throws {
        // Long enough for the rejection to land first on a loaded machine, short enough to wait for.
        let harness = try await ApprovalsHarness(["APPROVALS_DEFAULT_EXPIRY_SECONDS": "6"])
        try await harness.run { ingest, _, approvals in
            let key = try await harness.live.createKey(ingest)
            let phone = try await harness.token()
            try await Self.post(
                ingest,
                key: key,
                thread: "t2",
                msgID: "m1",
                body: Self.request.replacingOccurrences(of: #""id":5"#, with: #""id":"r-7""#)
            )
            let gate = try #require(try await Self.gate(approvals, token: phone)["gateId"] as? String)
            #expect(
                try await LiveCall.call(
                    approvals,
                    .post,
                    "/v1/approval-gates/\(gate)/decision",
                    token: phone,
                    json: ["decision": "reject", "reason": "never on the build dir"]
                ).0 == .ok
            )
            try await Self.post(ingest, key: key, thread: "t3", msgID: "m1", body: Self.request)
            let expected = [
                "t2": #"{"jsonrpc":"2.0","id":"r-7","result":{"outcome":{"outcome":"selected","optionId":"reject-once"}}}"#,
                "t3": #"{"jsonrpc":"2.0","id":5,"result":{"outcome":{"outcome":"cancelled"}}}"#,
            ]
            for (thread, body) in expected {
                let answered = await eventually(timeout: .seconds(15)) { (try? await Self.answers(harness, thread: thread)) == [body] }
                let stored = try await Self.answers(harness, thread: thread)
                #expect(answered, "\(thread): \(stored)")
            }
        }
    }

    @Test(
        "session/cancel answers the thread's pending request cancelled; a request with no usable option is answered cancelled at once; msgIds of services cannot be taken over HTTP"
    )
    func cancelled() async throws {
        let harness = try await ApprovalsHarness()
        try await harness.run { ingest, _, approvals in
            let key = try await harness.live.createKey(ingest)
            let phone = try await harness.token()
            try await Self.post(ingest, key: key, thread: "t4", msgID: "m1", body: Self.request)
            let gate = try #require(try await Self.gate(approvals, token: phone)["gateId"] as? String)
            let cancel = #"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_abc"}}"#
            let uri = "/v1/ingest/acp/t4?swarmId=s1&agentId=a1&direction=client_to_agent&msgId=c1&sessionId=sess_abc"
            #expect(try await LiveCall.retryingUnavailable { try await LiveCall.call(ingest, .post, uri, token: key, body: cancel) }.0 == .ok)
            // The thread's client_to_agent messages: the cancel, then the answer.
            let answered = await eventually(timeout: .seconds(15)) {
                (try? await Self.answers(harness, thread: "t4")) == [
                    cancel, #"{"jsonrpc":"2.0","id":5,"result":{"outcome":{"outcome":"cancelled"}}}"#,
                ]
            }
            #expect(answered)
            let (_, detail) = try await LiveCall.call(approvals, .get, "/v1/approval-gates/\(gate)", token: phone)
            #expect((detail["gate"] as? [String: Any])?["status"] as? String == "cancelled")

            let unusable = Self.request.replacingOccurrences(of: #""kind":"allow_once"}"#, with: #""kind":"x"}"#)
                .replacingOccurrences(of: #""kind":"reject_once"}"#, with: #""kind":"y"}"#)
            try await Self.post(ingest, key: key, thread: "t5", msgID: "m1", body: unusable)
            let refused = await eventually(timeout: .seconds(15)) {
                (try? await Self.answers(harness, thread: "t5")) == [#"{"jsonrpc":"2.0","id":5,"result":{"outcome":{"outcome":"cancelled"}}}"#]
            }
            #expect(refused)

            let forged = "/v1/ingest/acp/t4?swarmId=s1&agentId=a1&direction=client_to_agent&msgId=gate-\(gate)-answer"
            let (status, answer) = try await LiveCall.call(ingest, .post, forged, token: key, body: #"{"jsonrpc":"2.0","id":5,"result":{}}"#)
            #expect(status == .badRequest)
            #expect(answer.errorCode == "InvalidRequest")
        }
    }

    @Test("what is not a permission request from the agent opens nothing; ids and options are read as ACP has them")
    func parsing() throws {
        func parse(_ text: String) -> ACPPermission.Request? {
            ACPPermission.request(from: (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:])
        }
        let request = try #require(parse(Self.request))
        #expect(request.id == "5")
        #expect(request.options.map(\.optionId) == ["allow-once", "reject-once"])
        #expect(parse(Self.request.replacingOccurrences(of: "session/request_permission", with: "session/prompt")) == nil)
        #expect(parse(Self.request.replacingOccurrences(of: #""id":5"#, with: #""id":null"#)) == nil)
        #expect(parse(Self.request.replacingOccurrences(of: #""id":5"#, with: #""id":5.5"#)) == nil)
        #expect(parse(Self.request.replacingOccurrences(of: #""kind":"allow_once"}"#, with: #""kind":"maybe"}"#))?.options.count == 1)
        #expect(
            ACPPermission.answer(id: #""a\"b""#, optionID: nil)
                == Array(#"{"jsonrpc":"2.0","id":"a\"b","result":{"outcome":{"outcome":"cancelled"}}}"#.utf8)
        )
    }
}
