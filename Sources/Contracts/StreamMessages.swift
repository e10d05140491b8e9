/// A client message of stream protocol 1 on `/v1/stream` (docs/stream-protocol.md):
/// `subscribe` (with filters and a resume point) or `unsubscribe`.
public struct StreamClientMessage: Codable, Sendable, Equatable {
    /// Which events a subscription wants.
    public struct Filters: Codable, Sendable, Equatable {
        public var swarmIds: [String]?
        public var agentIds: [String]?
        /// `trace`, `debug`, `info`, `warn`, `error` or `fatal`.
        public var severityGte: String?
        /// Event kinds (`logs`, `states`, `toolCalls`, `usage`, `traceEvents`, `acp`, …).
        public var include: [String]?
        /// Tool names (seed 000's skill/tool filter): only tool calls of these tools. A skill is
        /// a tool of a swarm: `swarmIds` with `tools`.
        public var tools: [String]?

        public init(
            swarmIds: [String]? = nil,
            agentIds: [String]? = nil,
            severityGte: String? = nil,
            include: [String]? = nil,
            tools: [String]? = nil
        ) {
            self.swarmIds = swarmIds
            self.agentIds = agentIds
            self.severityGte = severityGte
            self.include = include
            self.tools = tools
        }
    }

    public var type: String
    public var requestId: String?
    public var filters: Filters?
    /// The last event the client has (its `eventId`).
    public var lastEventId: StreamEventID?
    /// Replay from this time instead (Unix milliseconds): from the first event committed at or
    /// after it (seed 000's time window). Not with `lastEventId`.
    public var fromTime: Int64?
    public var maxEventsPerSecond: Int?
    /// Collapse consecutive identical log lines of an agent into one `suppressed` count.
    public var collapseRepeats: Bool?
    /// Let the server send several events in one message, as a JSON array.
    public var batchEvents: Bool?

    public init(
        type: String,
        requestId: String? = nil,
        filters: Filters? = nil,
        lastEventId: StreamEventID? = nil,
        fromTime: Int64? = nil,
        maxEventsPerSecond: Int? = nil,
        collapseRepeats: Bool? = nil,
        batchEvents: Bool? = nil
    ) {
        self.type = type
        self.requestId = requestId
        self.filters = filters
        self.lastEventId = lastEventId
        self.fromTime = fromTime
        self.maxEventsPerSecond = maxEventsPerSecond
        self.collapseRepeats = collapseRepeats
        self.batchEvents = batchEvents
    }
}

/// An event id on the stream: the tenant seq, sent as a string; read from a string or a
/// number, never negative.
public struct StreamEventID: Codable, Sendable, Equatable {
    public var seq: Int64

    public init(seq: Int64) {
        self.seq = seq
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            self.seq = number
        } else if let text = try? container.decode(String.self), let number = Int64(text) {
            self.seq = number
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "lastEventId must be an eventId (a seq)")
        }
        guard self.seq >= 0 else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "lastEventId must not be negative")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(self.seq))
    }
}

/// A protocol message of the server on `/v1/stream` (events themselves are their frames, as
/// ingest rendered them). Fields a type does not use are absent.
public struct StreamServerMessage: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        case subscribed, unsubscribed, throttled, suppressed, ping, gap, error
    }

    public var type: Kind
    public var requestId: String?
    public var fromSeq: Int64?
    public var toSeq: Int64?
    public var headSeq: Int64?
    public var maxEventsPerSecond: Int?
    public var swarmId: String?
    public var agentId: String?
    public var count: Int?
    /// Milliseconds since the epoch (`ping`).
    public var ts: Int64?
    /// Why a `gap`: `rate_limit`, `slow_consumer`, `expired`, `unavailable`.
    public var reason: String?
    /// The `lastEventId` to subscribe with to get a gap's events.
    public var resumeFrom: String?
    public var error: ErrorEnvelope.Body?

    public init(type: Kind, requestId: String? = nil) {
        self.type = type
        self.requestId = requestId
    }

    /// The subscription is live from `from` (exclusive) with the log's head at `head`.
    public static func subscribed(requestID: String?, from: Int64, head: Int64, maxEventsPerSecond: Int) -> Self {
        var message = Self(type: .subscribed, requestId: requestID)
        message.fromSeq = from
        message.headSeq = head
        message.maxEventsPerSecond = maxEventsPerSecond
        return message
    }

    public static func unsubscribed(requestID: String?) -> Self {
        Self(type: .unsubscribed, requestId: requestID)
    }

    /// The subscription's rate is capped at `maxEventsPerSecond`.
    public static func throttled(requestID: String?, maxEventsPerSecond: Int) -> Self {
        var message = Self(type: .throttled, requestId: requestID)
        message.maxEventsPerSecond = maxEventsPerSecond
        return message
    }

    /// Log lines `from...to` of an agent, identical to the one sent before them, not sent.
    public static func suppressed(swarmID: String, agentID: String, count: Int, from: Int64, to: Int64) -> Self {
        var message = Self(type: .suppressed)
        message.swarmId = swarmID
        message.agentId = agentID
        message.count = count
        message.fromSeq = from
        message.toSeq = to
        return message
    }

    public static func ping(milliseconds: Int64) -> Self {
        var message = Self(type: .ping)
        message.ts = milliseconds
        return message
    }

    /// Events `from...to` that this connection will not send; subscribe again with
    /// `lastEventId` = `resumeFrom` to get them.
    public static func gap(from: Int64, to: Int64, reason: String) -> Self {
        var message = Self(type: .gap)
        message.fromSeq = from
        message.toSeq = to
        message.reason = reason
        message.resumeFrom = String(from - 1)
        return message
    }

    public static func error(_ body: ErrorEnvelope.Body) -> Self {
        var message = Self(type: .error, requestId: body.requestId)
        message.error = body
        return message
    }
}
