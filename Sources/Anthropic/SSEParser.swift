public import NIOCore

/// One server-sent event: its `event:` type (nil when it had none) and its `data:` lines joined
/// with `\n`.
public struct SSEEvent: Sendable, Equatable, Hashable {
    /// The `event:` field; nil when absent or empty (the spec's default type `message`).
    public var event: String?
    /// The `data:` lines, joined with `\n`.
    public var data: String

    /// An event.
    public init(event: String?, data: String) {
        self.event = event
        self.data = data
    }
}

/// An incremental parser for `text/event-stream` (the WHATWG server-sent events format), pure:
/// bytes in, events out.
///
/// Feed it the body as it arrives, in chunks split anywhere (mid-line, mid-CRLF, mid-UTF-8
/// character): it decodes only complete lines, so a character split across chunks is whole
/// when decoded. Lines end with `\n`, `\r\n` or `\r`; a blank line ends an event; lines that
/// start with `:` are comments; `data:` lines accumulate (joined with `\n`); one space after
/// the colon is dropped; `id:`, `retry:` and unknown fields are ignored; an event without
/// `data:` is not dispatched; a leading byte-order mark is skipped; an unterminated event at
/// the end of the stream is dropped (``hasPartialEvent`` tells whether there is one). One
/// event (its lines, separators included) may hold at most ``maximumEventBytes``.
public struct SSEParser: Sendable {
    /// The default cap on one event: 1 MiB.
    public static let defaultMaximumEventBytes = 1 << 20

    /// The most bytes one event may take.
    public let maximumEventBytes: Int

    private var line: [UInt8] = []
    private var afterCarriageReturn = false
    private var firstLine = true
    private var eventType: String?
    private var data: [UInt8] = []
    private var hasData = false
    private var eventBytes = 0

    /// A parser at the start of a stream.
    public init(maximumEventBytes: Int = SSEParser.defaultMaximumEventBytes) {
        self.maximumEventBytes = max(1, maximumEventBytes)
    }

    /// Whether bytes of an event not yet ended by a blank line are pending.
    public var hasPartialEvent: Bool { !self.line.isEmpty || self.eventBytes > 0 }

    /// Parses the readable bytes of `buffer`; answers the events they complete.
    ///
    /// - Throws: ``AnthropicError/invalidResponse(_:)`` when an event exceeds
    ///   ``maximumEventBytes``.
    public mutating func feed(_ buffer: ByteBuffer) throws(AnthropicError) -> [SSEEvent] {
        try self.feed(buffer.readableBytesView)
    }

    /// Parses `bytes`; answers the events they complete.
    ///
    /// - Throws: ``AnthropicError/invalidResponse(_:)`` when an event exceeds
    ///   ``maximumEventBytes``.
    public mutating func feed<Bytes: Sequence>(_ bytes: Bytes) throws(AnthropicError) -> [SSEEvent] where Bytes.Element == UInt8 {
        var events: [SSEEvent] = []
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\n"):
                if self.afterCarriageReturn {
                    self.afterCarriageReturn = false
                } else {
                    try self.endLine(into: &events)
                }
            case UInt8(ascii: "\r"):
                self.afterCarriageReturn = true
                try self.endLine(into: &events)
            default:
                self.afterCarriageReturn = false
                guard self.eventBytes + self.line.count < self.maximumEventBytes else { throw self.tooLarge() }
                self.line.append(byte)
            }
        }
        return events
    }

    private func tooLarge() -> AnthropicError {
        .invalidResponse("a server-sent event exceeds \(self.maximumEventBytes) bytes")
    }

    private mutating func endLine(into events: inout [SSEEvent]) throws(AnthropicError) {
        defer { self.line.removeAll(keepingCapacity: true) }
        if self.firstLine {
            self.firstLine = false
            if self.line.starts(with: [0xEF, 0xBB, 0xBF]) { self.line.removeFirst(3) }
        }
        if self.line.isEmpty {
            if self.hasData {
                events.append(SSEEvent(event: self.eventType, data: String(decoding: self.data, as: UTF8.self)))
            }
            self.eventType = nil
            self.data.removeAll(keepingCapacity: true)
            self.hasData = false
            self.eventBytes = 0
            return
        }
        self.eventBytes += self.line.count + 1
        guard self.eventBytes <= self.maximumEventBytes else { throw self.tooLarge() }
        if self.line[0] == UInt8(ascii: ":") { return }
        let field: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
        if let colon = self.line.firstIndex(of: UInt8(ascii: ":")) {
            field = self.line[..<colon]
            value = self.line[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            field = self.line[...]
            value = []
        }
        if field.elementsEqual("event".utf8) {
            self.eventType = value.isEmpty ? nil : String(decoding: value, as: UTF8.self)
        } else if field.elementsEqual("data".utf8) {
            if self.hasData { self.data.append(UInt8(ascii: "\n")) }
            self.data.append(contentsOf: value)
            self.hasData = true
        }
    }
}
