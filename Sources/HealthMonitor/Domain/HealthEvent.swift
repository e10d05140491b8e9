import Contracts
import Foundation

/// The part of a committed event health reads: its envelope's fields and, for the kinds that
/// carry what it measures (tool calls, usage, state, approval gates), the frame's fields.
struct HealthEvent: Sendable {
    /// The frame fields health reads (docs/ingest.md has every kind's fields).
    struct Fields: Decodable, Sendable {
        var tool: String?
        var ok: Bool?
        var latencyMs: Double?
        var model: String?
        var inputTokens: Int64?
        var costUsd: Double?
        var state: String?
        var status: String?
        var gateId: String?
        var attrs: [String: AttributeValue]?
    }

    var seq: Int64
    var swarmID: String
    var agentID: String
    var kind: BusEventKind
    var severity: BusSeverity
    /// When it committed, milliseconds since the epoch.
    var at: Int64
    var fields: Fields?

    static let parsedKinds: Set<BusEventKind> = [.toolCall, .usage, .state, .approval]

    init(seq: Int64, swarmID: String, agentID: String, kind: BusEventKind, severity: BusSeverity, at: Int64, frame: some Collection<UInt8>) {
        self.seq = seq
        self.swarmID = swarmID
        self.agentID = agentID
        self.kind = kind
        self.severity = severity
        self.at = at
        if Self.parsedKinds.contains(kind) { self.fields = try? JSONDecoder().decode(Fields.self, from: Data(frame)) }
    }

    /// A live event, as the bus carried it.
    init(_ envelope: BusEventEnvelope) {
        self.init(
            seq: envelope.seq,
            swarmID: envelope.swarmID,
            agentID: envelope.agentID,
            kind: envelope.kind,
            severity: envelope.severity,
            at: envelope.committedUnixNano / 1_000_000,
            frame: envelope.frame
        )
    }

    /// The session an event belongs to: its `session.id` (Claude Code, Codex) or `sessionId`
    /// attribute, else its agent.
    var sessionID: String {
        for key in ["session.id", "sessionId", "session_id", "conversation.id"] {
            if case .string(let id)? = self.fields?.attrs?[key], !id.isEmpty, id.utf8.count <= 256 { return id }
        }
        return self.agentID
    }

    /// A usage event's context tokens: input + cache creation + cache read.
    var contextTokens: Int64? {
        guard self.kind == .usage, let input = self.fields?.inputTokens else { return nil }
        var total = input
        for key in [
            "cache_read_tokens", "cache_creation_tokens", "cacheReadTokens", "cacheCreationTokens", "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ] {
            if case .number(let tokens)? = self.fields?.attrs?[key], tokens.isFinite, tokens >= 0, tokens < 1e12 { total += Int64(tokens) }
        }
        return total
    }

    /// The context window the event states itself (Codex's `model_context_window`).
    var statedWindow: Int64? {
        if case .number(let tokens)? = self.fields?.attrs?["model_context_window"], tokens.isFinite, tokens >= 1000, tokens < 1e9 {
            return Int64(tokens)
        }
        return nil
    }
}
