import Foundation
public import NIOCore

/// The layout of a client frame, the JSON object the event log stores and the live feed
/// carries for every event (docs/stream-protocol.md, "Events").
///
/// Ingest renders every frame, once, on the request path; the event log prefixes the seq at
/// commit. Readers never re-parse a frame per client: they read the few fields they need
/// through these accessors, which rely on how frames are rendered:
///
/// - A frame starts `{"seq":N,"eventId":"N"` and every field after it is rendered by ingest.
/// - A log frame carries its text as `"message":"…"`, escaped, before any field whose value is
///   not a string or a number (attributes come after it), so the first `,"message":"` is that
///   field.
/// - An ACP frame ends with its envelope, `…,"envelope":{…}}`, and every field before the
///   envelope is an escaped string or a number (so the first `,"envelope":{` is the one).
/// - A state frame carries `state`, `taskSummary` and `attrs` as JSON fields.
public enum EventFrame {
    /// An ACP frame's envelope (seed 003's persisted form), sliced from the frame without a copy.
    public static func envelope(in frame: ByteBuffer) -> ByteBuffer? {
        let bytes = frame.readableBytesView
        guard let start = bytes.firstRange(of: Self.envelopeMarker)?.lowerBound else { return nil }
        let offset = bytes.distance(from: bytes.startIndex, to: start) + Self.envelopeMarker.count - 1
        return frame.getSlice(at: frame.readerIndex + offset, length: frame.readableBytes - offset - 1)
    }

    /// A log frame's message text as rendered (escaped, without its quotes); `nil` when the
    /// frame has none.
    public static func message(in frame: ByteBuffer) -> ByteBufferView? {
        let bytes = frame.readableBytesView
        guard let (start, quote) = Self.stringField(Self.messageMarker, in: bytes) else { return nil }
        return bytes[start..<(quote ?? bytes.endIndex)]
    }

    /// Where the string value after the first `marker` (which ends with the value's opening
    /// quote) starts, and its closing quote (the first one not escaped; nil when the frame ends
    /// first); nil when there is no `marker`.
    private static func stringField(_ marker: [UInt8], in bytes: ByteBufferView) -> (start: Int, quote: Int?)? {
        guard let start = bytes.firstRange(of: marker)?.upperBound else { return nil }
        var index = start
        var escaped = false
        while index < bytes.endIndex {
            let byte = bytes[index]
            if !escaped && byte == UInt8(ascii: "\"") { return (start, index) }
            escaped = !escaped && byte == UInt8(ascii: "\\")
            index = bytes.index(after: index)
        }
        return (start, nil)
    }

    /// The fields of a state frame that describe the agent.
    public struct State: Decodable, Sendable, Equatable {
        public struct Attributes: Decodable, Sendable, Equatable {
            enum CodingKeys: CodingKey { case worker, tmuxSession, host }
            /// The agent's connector runs it as a worker (it takes requests on its stdin).
            public var worker: Bool?
            /// The tmux session the agent's connector runs in (`swarmdeck agent run --tmux`),
            /// and the host's name: where terminal-broker shows its terminal.
            public var tmuxSession: String?
            public var host: String?

            public init(worker: Bool? = nil, tmuxSession: String? = nil, host: String? = nil) {
                self.worker = worker
                self.tmuxSession = tmuxSession
                self.host = host
            }

            /// Lenient: attributes are the agent's; anything but a boolean is no flag, and a
            /// session or host name that is not a short string is none.
            public init(from decoder: any Decoder) throws {
                let container = try? decoder.container(keyedBy: CodingKeys.self)
                self.worker = try? container?.decode(Bool.self, forKey: .worker)
                self.tmuxSession = (try? container?.decode(String.self, forKey: .tmuxSession)).flatMap { (1...64).contains($0.utf8.count) ? $0 : nil }
                self.host = (try? container?.decode(String.self, forKey: .host)).flatMap { (1...253).contains($0.utf8.count) ? $0 : nil }
            }
        }

        public var state: String?
        public var taskSummary: String?
        public var attrs: Attributes?
    }

    /// A state frame's agent fields; `nil` when the frame is not valid JSON of that shape.
    public static func state(in frame: some Collection<UInt8>) -> State? {
        try? JSONDecoder().decode(State.self, from: Data(frame))
    }

    /// A tool call frame's tool name as rendered (escaped) with its closing quote, the form of
    /// ``renderedStringTail(_:)``; `nil` when the frame has none. Every field before `tool` in a
    /// tool call frame is an escaped string or a number, so the first `,"tool":"` is that field.
    /// Filters compare these bytes (live here, in SQL for a replay): one spelling of a name
    /// matches on both.
    public static func renderedTool(in frame: ByteBuffer) -> [UInt8]? {
        let bytes = frame.readableBytesView
        guard let (start, quote) = Self.stringField(Self.toolMarker, in: bytes), let quote else { return nil }
        return Array(bytes[start...quote])
    }

    /// A tool call frame's tool name, unescaped; `nil` when the frame has none.
    public static func tool(in frame: ByteBuffer) -> String? {
        guard let rendered = Self.renderedTool(in: frame) else { return nil }
        return try? JSONDecoder().decode(String.self, from: Data([UInt8(ascii: "\"")] + rendered))
    }

    /// How a tool call frame's `tool` starts: its first occurrence is the field (see
    /// ``tool(in:)``).
    public static let toolMarker = Array(#","tool":""#.utf8)

    /// `name` as ingest renders a string in a frame (escaped as its JSON writer escapes, without
    /// the opening quote) followed by the closing quote: what follows ``toolMarker`` in the frame
    /// of a call of that tool. For matching frames byte for byte where they cannot be parsed (a
    /// replay's SQL: Postgres refuses the JSON of a frame holding `\u0000` anywhere).
    public static func renderedStringTail(_ name: String) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(name.utf8.count + 1)
        Self.appendEscaped(name, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        return bytes
    }

    /// Appends `value`'s UTF-8 escaped as frames' strings are (`\"`, `\\`, `\n`, `\r`, `\t`,
    /// `\u00XX` for the other control bytes; nothing else), without quotes: ingest's JSON writer
    /// renders every string of a frame with it, and readers that match rendered bytes use it too.
    @inlinable
    public static func appendEscaped(_ value: String, to bytes: inout [UInt8]) {
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20:
                let hex: StaticString = "0123456789abcdef"
                bytes += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")]
                hex.withUTF8Buffer { digits in
                    bytes.append(digits[Int(byte >> 4)])
                    bytes.append(digits[Int(byte & 0xF)])
                }
            default: bytes.append(byte)
            }
        }
    }

    private static let envelopeMarker = Array(#","envelope":{"#.utf8)
    private static let messageMarker = Array(#","message":""#.utf8)
}
