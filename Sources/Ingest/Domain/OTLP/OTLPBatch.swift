import Contracts
import Crypto
import EventLog
import Foundation
import OTLP
import ServiceKit

/// The normalized events of one OTLP export request, and which of its items (spans, log
/// records, data points) were rejected, for the answer's partial success.
///
/// Each item becomes zero or more events (a span can be a trace event, a tool call and a
/// usage). Events get message ids derived from the item itself (a span's trace and span ids,
/// a digest of a log record or data point with its resource), so an exporter retrying the
/// same request gets duplicates, not copies.
struct OTLPBatch {
    let now: Int64
    let maxEventBytes: Int
    /// OTLP JSON writes trace and span ids in hex where proto3 JSON has base64; swift-protobuf
    /// decodes them as base64, and ``identifier(_:bytes:)`` undoes that.
    let json: Bool

    private(set) var events: [PreparedEvent] = []
    /// The item each event came from.
    private var itemOfEvent: [Int] = []
    /// Items seen (spans, log records, data points).
    private(set) var items = 0
    private(set) var rejectedItems = Set<Int>()
    /// Items whose own event is stored but a derived one (tool call, usage) was not.
    private var degradedItems = Set<Int>()
    /// Events that are an item's own (a span's trace event), not derived from it.
    private var primary: [Bool] = []
    private var reasons: [String] = []

    init(now: Int64, maxEventBytes: Int, json: Bool) {
        self.now = now
        self.maxEventBytes = maxEventBytes
        self.json = json
    }

    /// Starts the next item; returns its index.
    mutating func beginItem() -> Int {
        defer { self.items += 1 }
        return self.items
    }

    /// Validates and renders `event` as part of `item`. The rejection of an item's own event
    /// rejects the item; that of an event derived from it (`primary: false`) is only reported.
    mutating func add(_ event: NativeEvent, item: Int, primary: Bool = true) {
        do {
            let prepared = try event.prepare(now: self.now, maxEventBytes: self.maxEventBytes)
            // A service's swarm (pipelines) is not an agent's: that item is refused, the rest kept.
            if let problem = ReservedIDs.agentProblem(swarm: prepared.swarmID, msgID: prepared.msgID) {
                self.refuse(item, primary: primary, problem)
                return
            }
            self.events.append(prepared)
            self.itemOfEvent.append(item)
            self.primary.append(primary)
        } catch {
            self.refuse(item, primary: primary, error.reason)
        }
    }

    mutating func reject(_ item: Int, _ reason: String) {
        self.refuse(item, primary: true, reason)
    }

    private mutating func refuse(_ item: Int, primary: Bool, _ reason: String) {
        if primary {
            self.rejectedItems.insert(item)
        } else {
            self.degradedItems.insert(item)
        }
        if self.reasons.count < 3 { self.reasons.append(reason) }
    }

    /// Applies the log's outcomes for ``events`` (in the same order).
    mutating func apply(_ outcomes: [ItemOutcome]) {
        for (index, outcome) in outcomes.enumerated() {
            if case .rejected(let reason) = outcome { self.refuse(self.itemOfEvent[index], primary: self.primary[index], reason) }
        }
    }

    /// The partial-success message (empty when all went well): counts and the first reasons.
    /// OTLP allows a message with nothing rejected, as a warning.
    var errorMessage: String {
        let degraded = self.degradedItems.subtracting(self.rejectedItems)
        guard !self.rejectedItems.isEmpty || !degraded.isEmpty else { return "" }
        var counts: [String] = []
        if !self.rejectedItems.isEmpty { counts.append("\(self.rejectedItems.count) of \(self.items) rejected") }
        if !degraded.isEmpty { counts.append("\(degraded.count) stored without a derived event") }
        return counts.joined(separator: ", ") + ": " + self.reasons.joined(separator: "; ")
    }

    /// An id of `bytes` bytes as lowercase hex; nil when it is not that long or all zero.
    func identifier(_ data: Data, bytes: Int) -> String? {
        var raw = data
        if self.json {
            let text = data.base64EncodedString()
            if text.utf8.count == bytes * 2, let decoded = Self.bytes(fromHex: text) { raw = decoded }
        }
        guard raw.count == bytes, raw.contains(where: { $0 != 0 }) else { return nil }
        return raw.lowercaseHex
    }

    /// Unix milliseconds of a Unix-nanoseconds time; nil for 0 (unset).
    static func milliseconds(_ nanoseconds: UInt64) -> Double? {
        nanoseconds == 0 ? nil : Double(nanoseconds / 1_000_000)
    }

    /// A stable id for an item: its kind, then 128 bits of SHA-256 over `parts`.
    static func messageID(_ kind: String, _ parts: [UInt8]...) -> String {
        var hash = SHA256()
        for part in parts {
            withUnsafeBytes(of: UInt32(part.count).littleEndian) { hash.update(bufferPointer: $0) }
            hash.update(data: part)
        }
        return "otlp.\(kind).\(hash.finalize().prefix(16).lowercaseHex)"
    }

    static func bytes(fromHex text: String) -> Data? {
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var data = Data(capacity: utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            data.append(high << 4 | low)
            index += 2
        }
        return data
    }
}

/// Where an OTLP item comes from, in our terms: its swarm and its agent.
///
/// Set `swarmdeck.swarm.id` and `swarmdeck.agent.id` as resource attributes
/// (`OTEL_RESOURCE_ATTRIBUTES=swarmdeck.swarm.id=checkout,swarmdeck.agent.id=claude-1`) to name
/// them; otherwise they are read from the conventions agents already follow.
enum OTLPSource {
    static func swarm(_ attributes: OTLPAttributes) -> String {
        attributes.string("swarmdeck.swarm.id", "service.namespace", "service.name") ?? "default"
    }

    static func agent(_ attributes: OTLPAttributes) -> String {
        attributes.string(
            "swarmdeck.agent.id",
            "gen_ai.agent.id",
            "session.id",
            "conversation.id",
            "gen_ai.conversation.id",
            "service.instance.id",
            "service.name"
        ) ?? "unknown"
    }

    /// A native event of `kind` with its message id, swarm, agent and time filled in.
    static func event(_ kind: String, msgID: String, attributes: OTLPAttributes, ts: Double?) -> NativeEvent {
        var event = NativeEvent()
        event.kind = kind
        event.msgId = msgID
        event.swarmId = Self.swarm(attributes)
        event.agentId = Self.agent(attributes)
        event.ts = ts
        return event
    }
}
