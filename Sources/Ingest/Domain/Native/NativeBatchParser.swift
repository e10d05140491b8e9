/// Parses a native batch in one pass over the bytes, straight into ``NativeEvent``s.
///
/// Foundation's `JSONDecoder` took about 45% of ingest's CPU under load (generic containers,
/// dictionaries per object); this reads the known shape directly. Broken JSON fails the whole
/// body; a field of the wrong type rejects only its event, with the field named.
///
/// Bounded while it parses, not after: it stops at the event limit and at the limit of values
/// it builds for `attrs` (a body of a million tiny values would otherwise become a million
/// allocations), and what it skips (unknown keys, rejected values) it scans without building.
struct NativeBatchParser {
    /// The body is not JSON, or not `{"events": [ … ]}`, or (`tooLarge`) it passes a limit.
    struct Malformed: Error {
        var reason: String
        /// Past ``Limits``: the request is too large (413), not malformed.
        var tooLarge = false
    }

    /// What one body may make the parser build.
    struct Limits {
        /// Events in the batch.
        var maxEvents: Int
        /// JSON values built for the events' `attrs`, all events together.
        var maxAttributeValues: Int

        static let unlimited = Limits(maxEvents: .max, maxAttributeValues: .max)
    }

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0
    /// JSON values ``value()`` may still build (and, when ``countsSkipped``, ``skipValue()`` pass).
    private var valuesLeft: Int
    /// Counting mode: every value scanned counts against ``valuesLeft``.
    private var countsSkipped = false
    /// Nesting deeper than this is refused (recursion would otherwise exhaust the stack).
    static let maxDepth = 64

    private init(_ bytes: [UInt8], valueBudget: Int = .max) {
        self.bytes = bytes
        self.valuesLeft = valueBudget
    }

    /// One JSON value spanning the whole body (depth-limited, strict).
    static func parseJSON(_ bytes: [UInt8]) throws(Malformed) -> JSONValue {
        var parser = NativeBatchParser(bytes)
        let value = try parser.value()
        try parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw Malformed(reason: "trailing bytes after the JSON body") }
        return value
    }

    /// The events of a batch body, each parsed or rejected.
    static func parse(_ bytes: [UInt8], limits: Limits = .unlimited) throws(Malformed) -> [Result<NativeEvent, Rejection>] {
        var parser = NativeBatchParser(bytes, valueBudget: limits.maxAttributeValues)
        var events: [Result<NativeEvent, Rejection>]?
        try parser.skipWhitespace()
        guard parser.peek == UInt8(ascii: "{") else { throw Malformed(reason: "the body must be a JSON object") }
        try parser.object { parser, key throws(Malformed) in
            if key == "events" {
                guard parser.peek == UInt8(ascii: "[") else { throw Malformed(reason: "events must be an array") }
                var list: [Result<NativeEvent, Rejection>] = []
                var position = 0
                try parser.array { parser throws(Malformed) in
                    guard position < limits.maxEvents else {
                        throw Malformed(reason: "more than \(limits.maxEvents) events", tooLarge: true)
                    }
                    list.append(try parser.event(position: position))
                    position += 1
                }
                events = list
            } else {
                try parser.skipValue()
            }
        }
        try parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw Malformed(reason: "trailing bytes after the JSON body") }
        guard let events else { throw Malformed(reason: "events is required") }
        return events
    }

    // MARK: Events

    private mutating func event(position: Int) throws(Malformed) -> Result<NativeEvent, Rejection> {
        guard self.peek == UInt8(ascii: "{") else {
            try self.skipValue()
            return .failure(Rejection(reason: "events[\(position)] must be an object"))
        }
        var event = NativeEvent()
        var problem: String?
        try self.object { parser, key throws(Malformed) in
            func field(_ type: String) -> String { "events[\(position)].\(key) must be \(type)" }
            switch key {
            case "msgId": event.msgId = try parser.string(or: &problem, field("a string"))
            case "swarmId": event.swarmId = try parser.string(or: &problem, field("a string"))
            case "agentId": event.agentId = try parser.string(or: &problem, field("a string"))
            case "kind": event.kind = try parser.string(or: &problem, field("a string"))
            case "severity": event.severity = try parser.string(or: &problem, field("a string"))
            case "message": event.message = try parser.string(or: &problem, field("a string"))
            case "level": event.level = try parser.string(or: &problem, field("a string"))
            case "name": event.name = try parser.string(or: &problem, field("a string"))
            case "spanId": event.spanId = try parser.string(or: &problem, field("a string"))
            case "traceId": event.traceId = try parser.string(or: &problem, field("a string"))
            case "parentSpanId": event.parentSpanId = try parser.string(or: &problem, field("a string"))
            case "status": event.status = try parser.string(or: &problem, field("a string"))
            case "unit": event.unit = try parser.string(or: &problem, field("a string"))
            case "scope": event.scope = try parser.string(or: &problem, field("a string"))
            case "state": event.state = try parser.string(or: &problem, field("a string"))
            case "taskSummary": event.taskSummary = try parser.string(or: &problem, field("a string"))
            case "tool": event.tool = try parser.string(or: &problem, field("a string"))
            case "error": event.error = try parser.string(or: &problem, field("a string"))
            case "model": event.model = try parser.string(or: &problem, field("a string"))
            case "ts": event.ts = try parser.number(or: &problem, field("a number"))
            case "durationMs": event.durationMs = try parser.number(or: &problem, field("a number"))
            case "value": event.value = try parser.number(or: &problem, field("a number"))
            case "latencyMs": event.latencyMs = try parser.number(or: &problem, field("a number"))
            case "costUsd": event.costUsd = try parser.number(or: &problem, field("a number"))
            case "inputTokens": event.inputTokens = try parser.integer(or: &problem, field("an integer"))
            case "outputTokens": event.outputTokens = try parser.integer(or: &problem, field("an integer"))
            case "ok":
                switch parser.peek {
                case UInt8(ascii: "t"), UInt8(ascii: "f"): event.ok = try parser.boolean()
                case UInt8(ascii: "n"): try parser.skipValue()
                default:
                    problem = problem ?? field("a boolean")
                    try parser.skipValue()
                }
            case "attrs": event.attrs = try parser.value()
            default: try parser.skipValue()
            }
        }
        if let problem { return .failure(Rejection(reason: problem, msgId: event.msgId)) }
        for (name, value) in [("msgId", event.msgId), ("swarmId", event.swarmId), ("agentId", event.agentId), ("kind", event.kind)] where value == nil
        {
            return .failure(Rejection(reason: "\(name) is required", msgId: event.msgId))
        }
        return .success(event)
    }

    private mutating func string(or problem: inout String?, _ message: String) throws(Malformed) -> String? {
        switch self.peek {
        case UInt8(ascii: "\""): return try self.string()
        case UInt8(ascii: "n"):
            try self.skipValue()
            return nil
        default:
            problem = problem ?? message
            try self.skipValue()
            return nil
        }
    }

    private mutating func number(or problem: inout String?, _ message: String) throws(Malformed) -> Double? {
        switch self.peek ?? 0 {
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try self.number()
        case UInt8(ascii: "n"):
            try self.skipValue()
            return nil
        default:
            problem = problem ?? message
            try self.skipValue()
            return nil
        }
    }

    private mutating func integer(or problem: inout String?, _ message: String) throws(Malformed) -> Int64? {
        guard let number = try self.number(or: &problem, message) else { return nil }
        guard number == number.rounded(), abs(number) < 9e15 else {
            problem = problem ?? message
            return nil
        }
        return Int64(number)
    }

    // MARK: JSON

    private var peek: UInt8? { self.index < self.bytes.count ? self.bytes[self.index] : nil }

    private mutating func skipWhitespace() throws(Malformed) {
        while let byte = self.peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { self.index += 1 }
    }

    private mutating func expect(_ byte: UInt8) throws(Malformed) {
        try self.skipWhitespace()
        guard self.peek == byte else { throw Malformed(reason: "malformed JSON at byte \(self.index)") }
        self.index += 1
    }

    /// Calls `member` for each key with the parser positioned at its value.
    private mutating func object(_ member: (inout NativeBatchParser, String) throws(Malformed) -> Void) throws(Malformed) {
        try self.expect(UInt8(ascii: "{"))
        try self.skipWhitespace()
        if self.peek == UInt8(ascii: "}") {
            self.index += 1
            return
        }
        while true {
            try self.skipWhitespace()
            guard self.peek == UInt8(ascii: "\"") else { throw Malformed(reason: "malformed JSON at byte \(self.index)") }
            let key = try self.string()
            try self.expect(UInt8(ascii: ":"))
            try self.skipWhitespace()
            try member(&self, key)
            try self.skipWhitespace()
            switch self.peek {
            case UInt8(ascii: ","): self.index += 1
            case UInt8(ascii: "}"):
                self.index += 1
                return
            default: throw Malformed(reason: "malformed JSON at byte \(self.index)")
            }
        }
    }

    /// Calls `element` for each element with the parser positioned at it.
    private mutating func array(_ element: (inout NativeBatchParser) throws(Malformed) -> Void) throws(Malformed) {
        try self.expect(UInt8(ascii: "["))
        try self.skipWhitespace()
        if self.peek == UInt8(ascii: "]") {
            self.index += 1
            return
        }
        while true {
            try self.skipWhitespace()
            try element(&self)
            try self.skipWhitespace()
            switch self.peek {
            case UInt8(ascii: ","): self.index += 1
            case UInt8(ascii: "]"):
                self.index += 1
                return
            default: throw Malformed(reason: "malformed JSON at byte \(self.index)")
            }
        }
    }

    private mutating func string() throws(Malformed) -> String {
        try self.expect(UInt8(ascii: "\""))
        let start = self.index
        // Fast path: no escapes.
        while let byte = self.peek, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
            guard byte >= 0x20 else { throw Malformed(reason: "control character in a string at byte \(self.index)") }
            self.index += 1
        }
        guard let stop = self.peek else { throw Malformed(reason: "unterminated string") }
        if stop == UInt8(ascii: "\"") {
            defer { self.index += 1 }
            return try Self.utf8(self.bytes[start..<self.index])
        }
        var decoded = Array(self.bytes[start..<self.index])
        while let byte = self.peek {
            self.index += 1
            switch byte {
            case UInt8(ascii: "\""): return try Self.utf8(decoded[...])
            case UInt8(ascii: "\\"):
                guard let escaped = self.peek else { throw Malformed(reason: "unterminated string") }
                self.index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escaped)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try self.hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard self.peek == UInt8(ascii: "\\") else { throw Malformed(reason: "lone surrogate in a string") }
                        self.index += 1
                        guard self.peek == UInt8(ascii: "u") else { throw Malformed(reason: "lone surrogate in a string") }
                        self.index += 1
                        let low = try self.hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw Malformed(reason: "lone surrogate in a string") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw Malformed(reason: "invalid \\u escape") }
                    decoded.append(contentsOf: Array(String(Character(unicode)).utf8))
                default: throw Malformed(reason: "invalid escape in a string at byte \(self.index)")
                }
            default:
                guard byte >= 0x20 else { throw Malformed(reason: "control character in a string") }
                decoded.append(byte)
            }
        }
        throw Malformed(reason: "unterminated string")
    }

    private mutating func hex4() throws(Malformed) -> UInt32 {
        guard self.index + 4 <= self.bytes.count else { throw Malformed(reason: "truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = self.bytes[self.index]
            self.index += 1
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw Malformed(reason: "invalid \\u escape")
            }
            value = value << 4 | digit
        }
        return value
    }

    private static func utf8(_ slice: ArraySlice<UInt8>) throws(Malformed) -> String {
        guard let string = String(validating: slice, as: UTF8.self) else { throw Malformed(reason: "a string is not valid UTF-8") }
        return string
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, finite as a Double.
    private mutating func number() throws(Malformed) -> Double {
        let start = self.index
        func digits(_ parser: inout NativeBatchParser) -> Int {
            let from = parser.index
            while let byte = parser.peek, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { parser.index += 1 }
            return parser.index - from
        }
        if self.peek == UInt8(ascii: "-") { self.index += 1 }
        if self.peek == UInt8(ascii: "0") {
            self.index += 1
        } else if digits(&self) == 0 {
            throw Malformed(reason: "malformed number at byte \(start)")
        }
        if self.peek == UInt8(ascii: ".") {
            self.index += 1
            guard digits(&self) > 0 else { throw Malformed(reason: "malformed number at byte \(start)") }
        }
        if self.peek == UInt8(ascii: "e") || self.peek == UInt8(ascii: "E") {
            self.index += 1
            if self.peek == UInt8(ascii: "+") || self.peek == UInt8(ascii: "-") { self.index += 1 }
            guard digits(&self) > 0 else { throw Malformed(reason: "malformed number at byte \(start)") }
        }
        guard let text = String(validating: self.bytes[start..<self.index], as: UTF8.self), let value = Double(text), value.isFinite else {
            throw Malformed(reason: "number at byte \(start) is out of range")
        }
        return value
    }

    private mutating func boolean() throws(Malformed) -> Bool {
        if self.bytes[self.index...].starts(with: Array("true".utf8)) {
            self.index += 4
            return true
        }
        if self.bytes[self.index...].starts(with: Array("false".utf8)) {
            self.index += 5
            return false
        }
        throw Malformed(reason: "malformed JSON at byte \(self.index)")
    }

    private mutating func value() throws(Malformed) -> JSONValue {
        try self.skipWhitespace()
        self.depth += 1
        defer { self.depth -= 1 }
        guard self.depth <= Self.maxDepth else { throw Malformed(reason: "JSON nested deeper than \(Self.maxDepth) levels") }
        self.valuesLeft -= 1
        guard self.valuesLeft >= 0 else { throw Malformed(reason: "the events' attrs hold too many values", tooLarge: true) }
        switch self.peek {
        case UInt8(ascii: "{"):
            var fields: [(String, JSONValue)] = []
            try self.object { parser, key throws(Malformed) in fields.append((key, try parser.value())) }
            return .object(fields)
        case UInt8(ascii: "["):
            var elements: [JSONValue] = []
            try self.array { parser throws(Malformed) in elements.append(try parser.value()) }
            return .array(elements)
        case UInt8(ascii: "\""): return .string(try self.string())
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool(try self.boolean())
        case UInt8(ascii: "n"):
            guard self.bytes[self.index...].starts(with: Array("null".utf8)) else { throw Malformed(reason: "malformed JSON at byte \(self.index)") }
            self.index += 4
            return .null
        default: return .number(try self.number())
        }
    }

    /// Moves past one value, checking it as strictly as ``value()`` does but building nothing
    /// (object keys excepted, one at a time).
    private mutating func skipValue() throws(Malformed) {
        try self.skipWhitespace()
        self.depth += 1
        defer { self.depth -= 1 }
        if self.countsSkipped {
            self.valuesLeft -= 1
            guard self.valuesLeft >= 0 else { throw Malformed(reason: "the body holds too many JSON values", tooLarge: true) }
        }
        guard self.depth <= Self.maxDepth else { throw Malformed(reason: "JSON nested deeper than \(Self.maxDepth) levels") }
        switch self.peek {
        case UInt8(ascii: "{"): try self.object { parser, _ throws(Malformed) in try parser.skipValue() }
        case UInt8(ascii: "["): try self.array { parser throws(Malformed) in try parser.skipValue() }
        case UInt8(ascii: "\""): try self.skipString()
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try self.boolean()
        case UInt8(ascii: "n"):
            guard self.bytes[self.index...].starts(with: Array("null".utf8)) else { throw Malformed(reason: "malformed JSON at byte \(self.index)") }
            self.index += 4
        default: _ = try self.number()
        }
    }

    /// Moves past a string, checking its escapes and UTF-8 as ``string()`` does, without
    /// keeping it.
    private mutating func skipString() throws(Malformed) {
        try self.expect(UInt8(ascii: "\""))
        let start = self.index
        var escaped = false
        while let byte = self.peek, byte != UInt8(ascii: "\"") {
            guard byte >= 0x20 else { throw Malformed(reason: "control character in a string at byte \(self.index)") }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                break
            }
            self.index += 1
        }
        if !escaped {
            guard self.peek != nil else { throw Malformed(reason: "unterminated string") }
            _ = try Self.utf8(self.bytes[start..<self.index])
            self.index += 1
            return
        }
        // Rare: decode it (escapes, surrogates) the one way there is, and drop it.
        self.index = start - 1
        _ = try self.string()
    }

    // MARK: Counting

    /// The elements of the arrays at the end of `path` (a key's alternatives per level, from
    /// the top object; an array on the way is entered element by element, an object directly),
    /// scanning without building. Throws ``Malformed`` with `tooLarge` past `limit`.
    /// Also counts every JSON value of the body, at most `maxValues` (what a decoder would
    /// build): the values come back with the elements.
    static func countElements(
        _ bytes: [UInt8],
        path: [Set<String>],
        limit: Int,
        maxValues: Int = .max
    ) throws(Malformed) -> (elements: Int, values: Int) {
        var parser = NativeBatchParser(bytes, valueBudget: maxValues)
        parser.countsSkipped = true
        var total = 0
        try parser.skipWhitespace()
        try parser.count(path: path[...], limit: limit, total: &total)
        try parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw Malformed(reason: "trailing bytes after the JSON body") }
        return (total, maxValues - parser.valuesLeft)
    }

    private mutating func count(path: ArraySlice<Set<String>>, limit: Int, total: inout Int) throws(Malformed) {
        guard let keys = path.first, self.peek == UInt8(ascii: "{") else { return try self.skipValue() }
        try self.object { parser, key throws(Malformed) in
            guard keys.contains(key) else { return try parser.skipValue() }
            switch (parser.peek, path.count) {
            case (UInt8(ascii: "["), 1):
                try parser.array { parser throws(Malformed) in
                    total += 1
                    guard total <= limit else { throw Malformed(reason: "more than \(limit) items", tooLarge: true) }
                    try parser.skipValue()
                }
            case (UInt8(ascii: "["), _):
                try parser.array { parser throws(Malformed) in try parser.count(path: path.dropFirst(), limit: limit, total: &total) }
            case (UInt8(ascii: "{"), 2...):
                try parser.count(path: path.dropFirst(), limit: limit, total: &total)
            default:
                try parser.skipValue()
            }
        }
    }
}
