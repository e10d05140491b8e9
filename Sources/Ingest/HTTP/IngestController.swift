import Contracts
import EventLog
import Foundation
import Hummingbird
import Metrics
import ServiceKit

/// The ingest routes.
///
/// - `POST /v1/ingest/events` (ingest key): a native batch; answers per item.
/// - `POST /v1/admin/ingest-keys`, `GET /v1/admin/ingest-keys`, `DELETE /v1/admin/ingest-keys/{keyId}`
///   (access token with the `admin` scope): manage the caller's tenant's keys.
struct IngestController: Sendable {
    let keys: IngestKeyStore
    let writer: EventLogWriter
    /// The lane of requests that carry only a few state events (connectors' state changes and
    /// control acknowledgements): they never wait behind the tenant's telemetry.
    let priority: EventLogWriter
    /// Its own log, read (an ACP post's thread seq and owner).
    let log: EventLogReader
    let settings: IngestSettings
    let verifier: AccessTokenVerifier
    /// What requests being read and parsed may hold at once (shared with the OTLP receivers).
    let parsing: ByteBudget
    /// Each tenant's rate of bulk events (large requests of a tenant over it are refused unread).
    let rate: TenantEventRate
    /// Each tenant's rate of state events through the priority lane.
    let stateRate: TenantEventRate

    /// The share of ``parsing`` a route's request holds while it is served.
    func memory(maxBodyBytes: Int) -> RequestMemoryMiddleware {
        RequestMemoryMiddleware(
            budget: self.parsing,
            maxBodyBytes: maxBodyBytes,
            factor: IngestSettings.parseMemoryFactor,
            refused: Counter(label: "ingest_requests_refused_total", dimensions: [("reason", "parse_budget")])
        )
    }

    func addRoutes(to router: Router<ServiceRequestContext>) {
        // Authenticated first (an unknown key costs no budget), then within the parse budget.
        let agents = router.group("v1/ingest").add(middleware: AgentAuthenticationMiddleware(keys: self.keys)).add(middleware: self.rate.middleware)
        agents.group("events").add(middleware: self.memory(maxBodyBytes: self.settings.maxBodyBytes)).post { request, context in
            try await self.ingest(request, context: context)
        }
        agents.group("acp").add(middleware: self.memory(maxBodyBytes: self.settings.maxACPBodyBytes)).post(":threadId") { request, context in
            try await self.appendACP(request, context: context)
        }
        let admin = router.group("v1/admin/ingest-keys").add(middleware: AuthenticationMiddleware(verifier: self.verifier, requiring: .admin))
        admin.post { request, context in
            try await self.createKey(request, context: context)
        }
        admin.get { _, context in
            KeyList(keys: try await self.keys.list(tenant: context.requireIdentity().tenant))
        }
        admin.delete(":keyId") { _, context -> HTTPResponse.Status in
            let keyID = try context.parameters.require("keyId")
            guard try await self.keys.revoke(keyID: keyID, tenant: context.requireIdentity().tenant) else {
                throw APIError(.notFound, "no such ingest key")
            }
            return .noContent
        }
    }

    // MARK: Native batches

    /// A batch's answer: the counts, then each event's outcome in the request's order. Written
    /// by hand (``json()``): Foundation's encoder cost a result object per event on the hot path.
    /// The same JSON values as its `Encodable` form, absent fields left out (`BatchResponseTests`).
    struct BatchResponse: ResponseGenerator, Encodable {
        struct Result: Encodable {
            var msgId: String?
            var status: String
            var seq: Int64?
            var reason: String?
        }

        var accepted: Int
        var duplicates: Int
        var rejected: Int
        var results: [Result]

        func response(from request: Request, context: some RequestContext) throws -> Response {
            Response(
                status: .ok,
                headers: [.contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: self.json()))
            )
        }

        func json() -> [UInt8] {
            var writer = JSONWriter(capacity: 64 + self.results.count * 48)
            writer.raw("{\"accepted\":")
            writer.integer(Int64(self.accepted))
            writer.key("duplicates")
            writer.integer(Int64(self.duplicates))
            writer.key("rejected")
            writer.integer(Int64(self.rejected))
            writer.key("results")
            writer.raw("[")
            for (index, result) in self.results.enumerated() {
                writer.raw(index == 0 ? "{\"status\":" : ",{\"status\":")
                writer.string(result.status)
                if let msgId = result.msgId {
                    writer.key("msgId")
                    writer.string(msgId)
                }
                if let seq = result.seq {
                    writer.key("seq")
                    writer.integer(seq)
                }
                if let reason = result.reason {
                    writer.key("reason")
                    writer.string(reason)
                }
                writer.raw("}")
            }
            writer.raw("]}")
            return writer.bytes
        }
    }

    private func ingest(_ request: Request, context: ServiceRequestContext) async throws -> BatchResponse {
        let tenant = try context.requireAgentTenant()
        let body = try await request.jsonBody(upTo: self.settings.maxBodyBytes)
        let events: [Result<NativeEvent, Rejection>]
        do {
            events = try NativeBatchParser.parse(
                Array(buffer: body),
                limits: .init(maxEvents: self.settings.maxBatchEvents, maxAttributeValues: self.settings.maxBatchAttributeValues)
            )
        } catch  where error.tooLarge {
            throw APIError(
                .payloadTooLarge,
                "\(error.reason): at most \(self.settings.maxBatchEvents) events and \(self.settings.maxBatchAttributeValues) attrs values per request"
            )
        } catch {
            throw APIError(.invalidRequest, "the body is not a batch: expected {\"events\": [ … ]} (\(error.reason))")
        }

        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var prepared: [PreparedEvent] = []
        var slots: [Int?] = []  // index into prepared, or nil when rejected
        var results: [BatchResponse.Result] = []
        prepared.reserveCapacity(events.count)
        for item in events {
            switch item {
            case .failure(let rejection):
                slots.append(nil)
                results.append(.init(msgId: rejection.msgId, status: "rejected", seq: nil, reason: rejection.reason))
            case .success(let event):
                do throws(Rejection) {
                    let ready = try event.prepare(now: now, maxEventBytes: self.settings.maxEventBytes)
                    if let problem = ReservedIDs.agentProblem(swarm: ready.swarmID, msgID: ready.msgID) { throw Rejection(reason: problem) }
                    prepared.append(ready)
                    slots.append(prepared.count - 1)
                    results.append(.init(msgId: event.msgId, status: "accepted", seq: nil, reason: nil))
                } catch {
                    slots.append(nil)
                    results.append(.init(msgId: event.msgId, status: "rejected", seq: nil, reason: error.reason))
                }
            }
        }

        let priority = Self.isPriority(prepared)
        if priority { try await self.stateRate.check(tenant: tenant) }
        let outcomes = try await (priority ? self.priority : self.writer).submit(tenant: tenant, events: prepared, requestID: context.requestID)
        if priority { self.stateRate.spend(tenant: tenant, events: prepared.count) }
        var response = BatchResponse(accepted: 0, duplicates: 0, rejected: 0, results: results)
        for (index, slot) in slots.enumerated() {
            guard let slot else {
                response.rejected += 1
                continue
            }
            switch outcomes[slot] {
            case .accepted(let seq):
                response.accepted += 1
                response.results[index].seq = seq
            case .duplicate(let seq):
                response.duplicates += 1
                response.results[index].status = "duplicate"
                response.results[index].seq = seq
            case .rejected(let reason):
                response.rejected += 1
                response.results[index].status = "rejected"
                response.results[index].reason = reason
            }
        }
        return response
    }

    /// Whether a request's events take the priority lane: a few state events and nothing else.
    static func isPriority(_ events: [PreparedEvent]) -> Bool {
        !events.isEmpty && events.count <= Self.maxPriorityEvents && events.allSatisfy { $0.kind == .state }
    }

    /// The msgId prefixes of the ACP messages services append: approvals' (`gate-<gateId>-answer`
    /// and `gate-acp-<key>-refused`) and the frames people send on `/v1/acp` (`client-…`).
    static let serviceMsgIDPrefixes = ["gate-", "client-"]

    /// The most events a request may carry to take the priority lane.
    static let maxPriorityEvents = 16

    // MARK: ACP

    struct ACPResponse: ResponseEncodable {
        var status: String
        var seq: Int64
        var threadSeq: Int64?
    }

    /// `POST /v1/ingest/acp/{threadId}?swarmId=…&agentId=…&direction=agent_to_client&msgId=…[&sessionId=…]`
    /// with one JSON-RPC message as the body, stored byte for byte.
    private func appendACP(_ request: Request, context: ServiceRequestContext) async throws -> ACPResponse {
        let tenant = try context.requireAgentTenant()
        let query = request.uri.queryParameters
        func required(_ name: String) throws -> String {
            guard let value = query[Substring(name)] else {
                throw APIError(.invalidRequest, "query parameter \(name) is required", details: [name: "required"])
            }
            return String(value)
        }
        let msgID = try required("msgId")
        // Services' messages (approvals' answers, people's frames) own these key spaces: nobody
        // may take their ids first.
        if let prefix = Self.serviceMsgIDPrefixes.first(where: msgID.hasPrefix) {
            throw APIError(.invalidRequest, "msgIds starting \(prefix) are reserved for services", details: ["msgId": "reserved"])
        }
        if let problem = ReservedIDs.agentProblem(swarm: try required("swarmId"), msgID: msgID) {
            throw APIError(.invalidRequest, problem, details: ["msgId": "reserved"])
        }
        let body = try await request.jsonBody(upTo: self.settings.maxACPBodyBytes)
        let event: PreparedEvent
        do {
            event = try ACPFrame.prepare(
                body: Array(buffer: body),
                threadID: try context.parameters.require("threadId"),
                sessionID: query["sessionId"].map(String.init),
                direction: try required("direction"),
                msgID: msgID,
                swarmID: try required("swarmId"),
                agentID: try required("agentId"),
                now: Date()
            )
        } catch let rejection as Rejection {
            throw APIError(.invalidRequest, rejection.reason)
        }
        // A thread is its first envelope's agent's: another agent of the tenant may not post
        // into it (people's frames and approvals' answers, which come through NATS, are its).
        if let owner = try await self.log.threadAgent(tenant: tenant, thread: event.acp!.threadID),
            owner.swarm != event.swarmID || owner.agent != event.agentID
        {
            throw APIError(
                .conflict,
                "thread \(event.acp!.threadID.prefix(64)) is agent \(owner.agent) of swarm \(owner.swarm)'s: post as that agent, or to a thread of your own"
            )
        }
        let outcome = try await self.writer.submit(tenant: tenant, events: [event], requestID: context.requestID)
        switch outcome.first {
        case .accepted(let seq)?:
            return ACPResponse(status: "accepted", seq: seq, threadSeq: try await self.log.threadSeq(tenant: tenant, seq: seq))
        case .duplicate(let seq)?:
            return ACPResponse(status: "duplicate", seq: seq, threadSeq: try await self.log.threadSeq(tenant: tenant, seq: seq))
        case .rejected(let reason)?:
            throw APIError(.invalidRequest, reason)
        case nil:
            throw APIError(.serverError, "no outcome for the envelope")
        }
    }

    /// A one-line reason for a decoding error, naming the field.
    // MARK: Keys

    struct CreateKeyRequest: Decodable {
        var name: String
    }

    struct CreatedKey: ResponseEncodable {
        var keyId: String
        var key: String
        var tenant: String
        var name: String
    }

    private func createKey(_ request: Request, context: ServiceRequestContext) async throws -> EditedResponse<CreatedKey> {
        let identity = try context.requireIdentity()
        let body = try await request.decodeJSON(CreateKeyRequest.self, upTo: 16 << 10, shape: #"{"name": "…"}"#)
        guard (1...200).contains(body.name.count) else {
            throw APIError(.invalidRequest, "name must be 1 to 200 characters", details: ["name": "1 to 200 characters"])
        }
        let (keyID, key) = try await self.keys.create(tenant: identity.tenant, name: body.name)
        return EditedResponse(status: .created, response: CreatedKey(keyId: keyID, key: key, tenant: identity.tenant, name: body.name))
    }
}

struct KeyList: ResponseEncodable {
    var keys: [IngestKeyStore.KeyInfo]
}
