/// A native batch for `POST /v1/ingest/events` (docs/ingest.md): what an agent or a tool
/// sends, typed for Swift clients. Ingest parses it with its own bounded parser.
public struct IngestBatch: Codable, Sendable, Equatable {
    public var events: [IngestEvent]

    public init(events: [IngestEvent]) {
        self.events = events
    }
}

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
public struct IngestEvent: Codable, Sendable, Equatable {
    public var msgId: String?
    public var swarmId: String?
    public var agentId: String?
    public var kind: String?
    public var ts: Double?
    public var severity: String?
    public var message: String?
    public var level: String?
    public var name: String?
    public var spanId: String?
    public var traceId: String?
    public var parentSpanId: String?
    public var durationMs: Double?
    public var status: String?
    public var value: Double?
    public var unit: String?
    public var scope: String?
    public var state: String?
    public var taskSummary: String?
    public var tool: String?
    public var ok: Bool?
    public var latencyMs: Double?
    public var error: String?
    public var model: String?
    public var inputTokens: Int64?
    public var outputTokens: Int64?
    public var costUsd: Double?
    public var attrs: [String: AttributeValue]?

    /// An event of `kind` from `agentId` in `swarmId`; set the kind's fields on the result.
    public init(kind: String, msgId: String? = nil, swarmId: String? = nil, agentId: String? = nil) {
        self.kind = kind
        self.msgId = msgId
        self.swarmId = swarmId
        self.agentId = agentId
    }
}

/// A JSON value of an event's `attrs`.
public enum AttributeValue: Codable, Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([AttributeValue])
    case object([String: AttributeValue])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([AttributeValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: AttributeValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
