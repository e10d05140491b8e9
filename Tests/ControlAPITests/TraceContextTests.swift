import Contracts
import Foundation
import HTTPTypes
import HummingbirdTesting
import ServiceHarnesses
import ServiceKit
import TestSupport
import Testing

/// A phone's W3C `traceparent` (seed 004's correlation headers) reaches the bus with the
/// request's id: the command a control request causes carries both on its NATS message.
@Suite("Trace context from a request onto the bus (live NATS and Postgres)")
struct TraceContextTests {
    typealias H = ControlHarness

    @Test("a control request's traceparent and x-request-id ride on its command's NATS headers; an invalid traceparent is not passed on")
    func commandCarriesTheTrace() async throws {
        let harness = try await ControlHarness()
        let nats = try await harness.live.connectNATS()
        let subjects = try Subjects(prefix: harness.prefix)
        let commands = try await nats.subscribe(to: subjects.controlCommand(tenant: harness.tenant, swarm: "s1", agent: "a1"))
        try await nats.flush()
        try await harness.run { ingest, control in
            let key = try await harness.createKey(ingest)
            try await harness.announce(ingest, control, key: key, agent: "a1", swarm: "s1")
            let token = try await harness.token()
            let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            let (status, _) = try await H.call(
                control,
                .post,
                "/v1/agents/a1/control",
                token: token,
                json: ["action": "pause", "reason": "trace", "requestId": "trace-1"],
                headers: [HTTPField.Name("traceparent")!: trace, .requestID: "phone-req-1"]
            )
            #expect(status == .accepted)
            let (again, _) = try await H.call(
                control,
                .post,
                "/v1/agents/a1/control",
                token: token,
                json: ["action": "resume", "reason": "trace", "requestId": "trace-2"],
                headers: [HTTPField.Name("traceparent")!: "00-not-a-trace-01", .requestID: "phone-req-2"]
            )
            #expect(again == .accepted)
            // The request's own publish of each command, by its requestId. (On a loaded machine
            // the dispatcher may publish a command too, before the request has recorded its
            // publish: that copy carries no request's context, and the agent's queue takes one.)
            var iterator = commands.makeAsyncIterator()
            var published: [String: [(traceparent: String?, requestID: String?)]] = [:]
            var read = 0
            while read < 4,
                published["trace-1"]?.contains(where: { $0.requestID != nil }) != true
                    || published["trace-2"]?.contains(where: { $0.requestID != nil }) != true
            {
                read += 1
                let message = try #require(await iterator.next())
                let command = try BusControlCommand(serializedBytes: message.payload)
                published[command.requestID, default: []].append(
                    (message.headers[TraceParent.headerName], message.headers[HeaderName.requestID])
                )
            }
            let first = try #require(published["trace-1"]?.first { $0.requestID != nil })
            #expect(first.traceparent == trace)
            #expect(first.requestID == "phone-req-1")
            let second = try #require(published["trace-2"]?.first { $0.requestID != nil })
            #expect(second.traceparent == nil)
            #expect(second.requestID == "phone-req-2")
        }
    }
}
