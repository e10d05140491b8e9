import Contracts
import EventLog
import Foundation
import Logging
import ServiceKit
import ServiceLifecycle
import SwiftProtobuf

/// The service lane: events other services (approvals, health-monitor, pipeline-runner) add to
/// a tenant's log. A `ServiceEventBatch` arrives as a NATS request on
/// ``Subjects/serviceEvents`` (the replicas share it as queue group `ingest`) and is answered
/// with a `ServiceEventReply` after commit, through the priority lane of group commit.
///
/// Only services hold credentials for that subject (the staging NATS users); agents post
/// through HTTP, where the kinds services originate (approval, incident) do not exist, so no
/// agent can forge a gate or an incident; an ACP message a service appends carries
/// `"origin":"service"` in its envelope, which no HTTP post can set, so an ACP client can tell
/// approvals' answer to a permission request from one an agent posted.
///
/// People's ACP frames (stream-fanout's `/v1/acp`) come on a lane of their own,
/// ``Subjects/clientACPFrames``: ACP only, stored as `"origin":"client"` with their device.
/// Stream-fanout may publish there only, so it can forge no service's message, and no service
/// can pass for a person.
final class ServiceEventIntake: Service {
    let connection: NATSConnection
    let subjects: Subjects
    let writer: EventLogWriter
    let maxEventBytes: Int
    /// One ACP message's body (`ingest.max-acp-body-bytes`, as over HTTP).
    let maxACPBodyBytes: Int
    let logger: Logger

    /// The services' lane and people's, on their subjects (queue group `ingest`).
    let lanes: (services: NATSResponder, people: NATSResponder)

    init(connection: NATSConnection, subjects: Subjects, writer: EventLogWriter, maxEventBytes: Int, maxACPBodyBytes: Int, logger: Logger) {
        self.connection = connection
        self.subjects = subjects
        self.writer = writer
        self.maxEventBytes = maxEventBytes
        self.maxACPBodyBytes = maxACPBodyBytes
        self.logger = logger
        func lane(_ name: String, _ subject: String) -> NATSResponder {
            NATSResponder(
                name: name,
                connection: connection,
                subject: subject,
                queue: "ingest",
                buffering: .backpressure(maxMessages: 10_000, maxBytes: 64 << 20),
                maxConcurrent: Self.maxConcurrent,
                logger: logger
            )
        }
        self.lanes = (lane("service-lane", subjects.serviceEvents), lane("people-lane", subjects.clientACPFrames))
    }

    /// Ready once the server has both lanes' subscriptions: before, a service's batch finds no
    /// responder unless another replica takes it.
    var readiness: [ReadinessCheck] { [self.lanes.services.readiness, self.lanes.people.readiness] }

    /// Batches handled at once per replica.
    static let maxConcurrent = 64
    /// Events in one batch; a larger batch is refused whole.
    static let maxBatchEvents = 100
    /// The kinds a service may originate (ACP: a message appended to a thread; metric: a swarm's
    /// health metrics from health-monitor; state, usage and log: a service that is an agent,
    /// pipeline-runner's pipelines).
    static let kinds: Set<BusEventKind> = [.approval, .incident, .acp, .metric, .state, .usage, .log]

    /// Who sends on a subject: services, or stream-fanout for people.
    enum Lane: Sendable {
        case services, people
    }

    func run() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await self.lanes.services.serve { await self.handle($0, lane: .services) } }
            group.addTask { try await self.lanes.people.serve { await self.handle($0, lane: .people) } }
        }
    }

    private func handle(_ message: NATSMessage, lane: Lane) async {
        guard let reply = message.reply else { return }
        var answer = BusServiceEventReply()
        do {
            let batch = try BusServiceEventBatch(serializedBytes: message.payload)
            let events = try Self.prepare(batch, lane: lane, maxEventBytes: self.maxEventBytes, maxACPBodyBytes: self.maxACPBodyBytes)
            let requestID = message.headers[HeaderName.requestID] ?? ""
            let outcomes = try await self.writer.submit(tenant: batch.tenantID, events: events, requestID: requestID)
            for outcome in outcomes {
                switch outcome {
                case .accepted(let seq), .duplicate(let seq): answer.seqs.append(seq)
                case .rejected(let reason): throw APIError(.invalidRequest, reason)
                }
            }
        } catch let error as APIError {
            answer = BusServiceEventReply()
            answer.error = error.message
            answer.retryable = error.code.isRetryable
        } catch {
            answer = BusServiceEventReply()
            answer.error = "not a ServiceEventBatch: \(error)"
        }
        if !answer.error.isEmpty {
            // The sender's correlation, when a request caused the batch (ServiceEventSender).
            var metadata: Logger.Metadata = ["error": "\(answer.error)"]
            if let requestID = message.headers[HeaderName.requestID] { metadata["request_id"] = "\(requestID.prefix(128))" }
            if let trace = TraceParent(message.headers[TraceParent.headerName]) { metadata["trace_id"] = "\(trace.traceID)" }
            self.logger.warning("service events refused", metadata: metadata)
        }
        do {
            try self.connection.publish(try answer.serializedBytes() as [UInt8], to: reply)
        } catch {
            self.logger.warning("service events reply not sent", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    /// The batch's events, checked: a known tenant id shape, at most ``maxBatchEvents``
    /// events, each of a service kind, with valid ids and a frame tail that makes a JSON object
    /// of at most `maxEventBytes` (an ACP message: checked and rendered as over HTTP, its body
    /// at most `maxACPBodyBytes`).
    static func prepare(
        _ batch: BusServiceEventBatch,
        lane: Lane = .services,
        maxEventBytes: Int,
        maxACPBodyBytes: Int = 1 << 20
    ) throws(APIError) -> [PreparedEvent] {
        if let problem = EntityID.problem(batch.tenantID, field: "tenant_id") { throw APIError(.invalidRequest, problem) }
        guard (1...Self.maxBatchEvents).contains(batch.events.count) else {
            throw APIError(.invalidRequest, "a batch holds 1 to \(Self.maxBatchEvents) events")
        }
        return try batch.events.map { (event) throws(APIError) -> PreparedEvent in
            guard Self.kinds.contains(event.kind) else { throw APIError(.invalidRequest, "kind \(event.kind) is not a service event kind") }
            guard lane == .services || event.kind == .acp else { throw APIError(.invalidRequest, "people's lane carries ACP frames only") }
            // A swarm's metric or incident belongs to no agent: its agent_id is empty.
            let swarmScoped = (event.kind == .metric || event.kind == .incident) && event.agentID.isEmpty
            for (value, field) in [(event.msgID, "msg_id"), (event.swarmID, "swarm_id"), (event.agentID, "agent_id")]
            where !(swarmScoped && field == "agent_id") {
                if let problem = EntityID.problem(value, field: field) { throw APIError(.invalidRequest, problem) }
            }
            if event.kind == .acp {
                guard event.hasAcp, event.acp.body.count <= maxACPBodyBytes else {
                    throw APIError(.invalidRequest, "an ACP event needs its message (acp), its body at most \(maxACPBodyBytes) bytes")
                }
                // A person's frame (relayed from /v1/acp, on people's lane only) goes to the agent
                // and names its device.
                let origin = lane == .people ? "client" : "service"
                guard event.acp.origin.isEmpty || event.acp.origin == origin else {
                    throw APIError(.invalidRequest, "an ACP message on this lane is \(origin)'s")
                }
                if lane == .people {
                    if let problem = EntityID.problem(event.acp.device, field: "device") { throw APIError(.invalidRequest, problem) }
                    guard event.acp.direction == "client_to_agent" else {
                        throw APIError(.invalidRequest, "a person's ACP message goes client_to_agent")
                    }
                } else {
                    guard event.acp.device.isEmpty else { throw APIError(.invalidRequest, "a service's ACP message names no device") }
                }
                do throws(Rejection) {
                    return try ACPFrame.prepare(
                        body: Array(event.acp.body),
                        threadID: event.acp.threadID,
                        sessionID: event.acp.sessionID.isEmpty ? nil : event.acp.sessionID,
                        direction: event.acp.direction,
                        msgID: event.msgID,
                        swarmID: event.swarmID,
                        agentID: event.agentID,
                        origin: origin,
                        device: lane == .people ? event.acp.device : nil,
                        answersSeq: event.acp.answersSeq > 0 ? event.acp.answersSeq : nil,
                        now: Date()
                    )
                } catch {
                    throw APIError(.invalidRequest, error.reason)
                }
            }
            guard (BusSeverity.trace.rawValue...BusSeverity.fatal.rawValue).contains(event.severity.rawValue) else {
                throw APIError(.invalidRequest, "severity is required")
            }
            let tail = Array(event.frameTail)
            guard tail.count <= maxEventBytes, tail.first == UInt8(ascii: ","), tail.last == UInt8(ascii: "}"),
                let frame = (try? JSONSerialization.jsonObject(with: Data(#"{"seq":0"#.utf8 + tail))) as? [String: Any]
            else {
                throw APIError(.invalidRequest, "frame_tail must continue a JSON object (`,…}`) in at most \(maxEventBytes) bytes")
            }
            // The kinds agents post too are read by type (the fleet, the stream's filters); a
            // log's message must be where readers find it (EventFrame.message).
            if [.state, .usage, .log].contains(event.kind) {
                guard frame["type"] as? String == event.kind.frameType else {
                    throw APIError(.invalidRequest, "a \(event.kind.frameType) event's frame has type \(event.kind.frameType)")
                }
                if event.kind == .log, frame["message"] as? String == nil || frame.values.contains(where: { !($0 is String || $0 is NSNumber) }) {
                    throw APIError(.invalidRequest, "a log event's frame has a message and only string or number fields")
                }
            }
            return PreparedEvent(
                msgID: event.msgID,
                swarmID: event.swarmID,
                agentID: event.agentID,
                kind: event.kind,
                severity: event.severity,
                occurredAtMilliseconds: event.occurredUnixNano / 1_000_000,
                frameTail: tail
            )
        }
    }
}
