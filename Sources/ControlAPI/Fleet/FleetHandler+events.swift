import ControlAPIContract
import EventLog
import Foundation
import ServiceKit

extension FleetHandler {
    /// The bytes of frames one answer carries at most (at least one frame, whatever its size).
    static let agentEventsMaxBytes = 4 << 20

    func listAgentEvents(_ input: Operations.ListAgentEvents.Input) async throws -> Operations.ListAgentEvents.Output {
        let identity = try Caller.person()
        try InputCheck.id(input.path.agentId, "agentId")
        try InputCheck.range(input.query.limit, "limit", 1...200)
        if let before = input.query.before, before < 1 {
            throw APIError(.invalidRequest, "before must be at least 1")
        }
        let limit = input.query.limit ?? 50
        let (events, read) = try await self.eventLog.agentEvents(
            tenant: identity.tenant,
            agent: input.path.agentId,
            before: input.query.before,
            limit: limit,
            maxBytes: Self.agentEventsMaxBytes
        )
        let decoder = JSONDecoder()
        let frames = try events.map {
            try decoder.decode(Components.Schemas.AgentEvents.EventsPayloadPayload.self, from: Data(buffer: $0.frame))
        }
        let nextBefore = AgentEventsPage.nextBefore(oldest: events.first?.seq, answered: events.count, read: read, limit: limit)
        return .ok(.init(body: .json(.init(events: frames, nextBefore: nextBefore))))
    }
}

extension FleetHandler {
    /// The most bytes of frames one trace answer holds.
    static let traceMaxBytes = 2 << 20

    func getTrace(_ input: Operations.GetTrace.Input) async throws -> Operations.GetTrace.Output {
        let identity = try Caller.person()
        let traceID = input.path.traceId
        guard traceID.isLowercaseHex(count: 32) else {
            throw APIError(.invalidRequest, "traceId must be 32 lowercase hex digits")
        }
        try InputCheck.range(input.query.limit, "limit", 1...1000)
        let limit = input.query.limit ?? 500
        let (events, read) = try await self.eventLog.traceSpans(tenant: identity.tenant, traceID: traceID, limit: limit, maxBytes: Self.traceMaxBytes)
        guard !events.isEmpty else { throw APIError(.notFound, "no span of this trace is in the event log") }
        let decoder = JSONDecoder()
        let spans = try events.map { try decoder.decode(Components.Schemas.Trace.SpansPayloadPayload.self, from: Data(buffer: $0.frame)) }
        return .ok(
            .init(
                body: .json(
                    .init(
                        traceId: traceID,
                        spans: spans,
                        truncated: events.count < read || read >= limit,
                        webUrl: self.views.webURL("traces", traceID)
                    )
                )
            )
        )
    }
}
