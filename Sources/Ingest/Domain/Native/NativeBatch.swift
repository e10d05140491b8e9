import Contracts
import EventLog
import Foundation

/// One event of a native batch. `kind` decides which fields apply:
///
/// | kind | fields |
/// | --- | --- |
/// | `log` | `message`, `level` |
/// | `trace` | `name`, `spanId`, `traceId`, `parentSpanId`, `durationMs`, `status` |
/// | `metric` | `name`, `value`, `unit`, `scope` (`agent` or `swarm`) |
/// | `state` | `state`, `taskSummary` |
/// | `tool_call` | `tool`, `ok`, `latencyMs`, `error` |
/// | `usage` | `model`, `inputTokens`, `outputTokens`, `costUsd` |
///
/// Every kind takes `msgId`, `swarmId`, `agentId`, `ts` (Unix milliseconds, default now),
/// `severity` (trace…fatal; default by kind) and `attrs` (any JSON object).
struct NativeEvent {
    var msgId: String?
    var swarmId: String?
    var agentId: String?
    var kind: String?
    var ts: Double?
    var severity: String?
    var message: String?
    var level: String?
    var name: String?
    var spanId: String?
    var traceId: String?
    var parentSpanId: String?
    var durationMs: Double?
    var status: String?
    var value: Double?
    var unit: String?
    var scope: String?
    var state: String?
    var taskSummary: String?
    var tool: String?
    var ok: Bool?
    var latencyMs: Double?
    var error: String?
    var model: String?
    var inputTokens: Int64?
    var outputTokens: Int64?
    var costUsd: Double?
    var attrs: JSONValue?
}

/// Why an event was rejected.
struct Rejection: Error {
    var reason: String
    /// The event's msgId, when it could be read.
    var msgId: String?

    /// Identifiers (ids of messages, swarms, agents, threads, sessions) follow
    /// `Contracts.EntityID`'s rule, the one control-api checks too.
    static func checkIdentifier(_ value: String, field: String) throws(Rejection) {
        if let problem = EntityID.problem(value, field: field) { throw Rejection(reason: problem) }
    }
}

extension NativeEvent {
    static let maxIdentifierBytes = EntityID.maxBytes

    /// Validates and renders the event.
    func prepare(now: Int64, maxEventBytes: Int) throws(Rejection) -> PreparedEvent {
        guard let msgId = self.msgId, let swarmId = self.swarmId, let agentId = self.agentId, let kindName = self.kind else {
            throw Rejection(reason: "msgId, swarmId, agentId and kind are required")
        }
        for (field, value) in [("msgId", msgId), ("swarmId", swarmId), ("agentId", agentId)] {
            try Rejection.checkIdentifier(value, field: field)
        }
        guard let kind = BusEventKind(nativeName: kindName) else {
            throw Rejection(reason: "kind must be one of log, trace, metric, state, tool_call, usage")
        }
        let occurred: Int64
        if let ts = self.ts {
            guard ts.isFinite, ts >= 0, ts < 4_102_444_800_000 else { throw Rejection(reason: "ts must be Unix milliseconds") }
            occurred = Int64(ts)
        } else {
            occurred = now
        }
        if let attrs = self.attrs, case .object = attrs {
        } else if self.attrs != nil {
            throw Rejection(reason: "attrs must be a JSON object")
        }
        let severity: BusSeverity
        if let name = self.severity ?? (kind == .log ? self.level : nil) {
            guard let parsed = BusSeverity(name: name) else { throw Rejection(reason: "severity must be trace, debug, info, warn, error or fatal") }
            severity = parsed
        } else {
            severity = self.defaultSeverity(kind)
        }

        var writer = JSONWriter(capacity: 256)
        writer.key("type")
        writer.string(kind.frameType)
        writer.key("ts")
        writer.integer(occurred)
        writer.key("swarmId")
        writer.string(swarmId)
        writer.key("agentId")
        writer.string(agentId)
        writer.key("severity")
        writer.string(severity.name)
        try self.writeKindFields(kind, severity: severity, into: &writer)
        if let attrs = self.attrs {
            writer.key("attrs")
            writer.value(attrs)
        }
        writer.raw("}")
        guard writer.bytes.count <= maxEventBytes else {
            throw Rejection(reason: "event is \(writer.bytes.count) bytes; the limit is \(maxEventBytes)")
        }
        return PreparedEvent(
            msgID: msgId,
            swarmID: swarmId,
            agentID: agentId,
            kind: kind,
            severity: severity,
            occurredAtMilliseconds: occurred,
            frameTail: writer.bytes
        )
    }

    private func defaultSeverity(_ kind: BusEventKind) -> BusSeverity {
        switch kind {
        case .toolCall where self.ok == false: .error
        case .trace where self.status == "error": .error
        default: .info
        }
    }

    private func writeKindFields(_ kind: BusEventKind, severity: BusSeverity, into writer: inout JSONWriter) throws(Rejection) {
        switch kind {
        case .log:
            guard let message = self.message else { throw Rejection(reason: "a log needs message") }
            writer.key("level")
            writer.string(severity.name)
            writer.key("message")
            writer.string(message)
        case .trace:
            guard let name = self.name, let spanId = self.spanId else { throw Rejection(reason: "a trace event needs name and spanId") }
            writer.key("name")
            writer.string(name)
            writer.key("spanId")
            writer.string(spanId)
            if let traceId {
                writer.key("traceId")
                writer.string(traceId)
            }
            if let parentSpanId {
                writer.key("parentSpanId")
                writer.string(parentSpanId)
            }
            if let durationMs {
                writer.key("durationMs")
                writer.number(durationMs)
            }
            if let status {
                writer.key("status")
                writer.string(status)
            }
        case .metric:
            guard let name = self.name, let value = self.value, value.isFinite else {
                throw Rejection(reason: "a metric needs name and a finite value")
            }
            let scope = self.scope ?? "agent"
            guard scope == "agent" || scope == "swarm" else { throw Rejection(reason: "scope must be agent or swarm") }
            writer.key("scope")
            writer.string(scope)
            writer.key("name")
            writer.string(name)
            writer.key("value")
            writer.number(value)
            if let unit {
                writer.key("unit")
                writer.string(unit)
            }
        case .state:
            guard let state = self.state else { throw Rejection(reason: "a state event needs state") }
            writer.key("state")
            writer.string(state)
            if let taskSummary {
                writer.key("taskSummary")
                writer.string(taskSummary)
            }
        case .toolCall:
            guard let tool = self.tool, let ok = self.ok else { throw Rejection(reason: "a tool_call needs tool and ok") }
            writer.key("tool")
            writer.string(tool)
            writer.key("ok")
            writer.bool(ok)
            if let latencyMs {
                writer.key("latencyMs")
                writer.number(latencyMs)
            }
            if let error {
                writer.key("error")
                writer.string(error)
            }
        case .usage:
            guard let inputTokens, let outputTokens, inputTokens >= 0, outputTokens >= 0 else {
                throw Rejection(reason: "usage needs inputTokens and outputTokens (non-negative)")
            }
            if let model {
                writer.key("model")
                writer.string(model)
            }
            writer.key("inputTokens")
            writer.integer(inputTokens)
            writer.key("outputTokens")
            writer.integer(outputTokens)
            if let costUsd {
                writer.key("costUsd")
                writer.number(costUsd)
            }
        default:
            throw Rejection(reason: "kind \(self.kind ?? "") cannot be sent as a native event")
        }
    }
}

extension BusEventKind {
    /// The kinds a native batch may carry.
    init?(nativeName: String) {
        switch nativeName {
        case "log": self = .log
        case "trace": self = .trace
        case "metric": self = .metric
        case "state": self = .state
        case "tool_call": self = .toolCall
        case "usage": self = .usage
        default: return nil
        }
    }
}
