/// Counts an OTLP export's items (spans, log records, data points) in its bytes, before
/// anything is decoded: an export of millions of empty records is a few megabytes on the wire
/// and gigabytes decoded, so ingest refuses one past its item limit without building it.
///
/// Each export names where its items are: a path of fields, each a set of alternatives (a
/// metric's points are under whichever of gauge, sum, histogram… it has).
public struct OTLPItemCount: Sendable {
    /// Protobuf field numbers, outermost first; the last level's occurrences are counted.
    public let fields: [Set<UInt64>]
    /// The same path in OTLP JSON (lowerCamelCase, or the proto names, as protobuf JSON allows).
    public let keys: [Set<String>]

    public static let traces = OTLPItemCount(
        fields: [[1], [2], [2]],
        keys: [["resourceSpans", "resource_spans"], ["scopeSpans", "scope_spans"], ["spans"]]
    )
    public static let logs = OTLPItemCount(
        fields: [[1], [2], [2]],
        keys: [["resourceLogs", "resource_logs"], ["scopeLogs", "scope_logs"], ["logRecords", "log_records"]]
    )
    /// Metric: gauge 5, sum 7, histogram 9, exponential_histogram 10, summary 11; each holds
    /// data_points at 1.
    public static let metrics = OTLPItemCount(
        fields: [[1], [2], [2], [5, 7, 9, 10, 11], [1]],
        keys: [
            ["resourceMetrics", "resource_metrics"], ["scopeMetrics", "scope_metrics"], ["metrics"],
            ["gauge", "sum", "histogram", "exponentialHistogram", "exponential_histogram", "summary"], ["dataPoints", "data_points"],
        ]
    )

    /// Past a limit: counting stopped there.
    public struct TooMany: Error {
        public var reason: String

        public init(reason: String) { self.reason = reason }
    }
    /// Not the wire format or JSON it claims to be.
    public struct Malformed: Error {
        public var reason: String

        public init(reason: String) { self.reason = reason }
    }

    /// What an export holds: its items, and the values a decoder would build for it (every
    /// field and nested message, every JSON value), which is what decoding costs.
    public struct Count: Equatable, Sendable {
        public var items: Int
        public var values: Int

        public init(items: Int, values: Int) {
            self.items = items
            self.values = values
        }
    }

    /// Nesting deeper than this is not looked into (a field there counts as one value).
    static let maxDepth = 24

    /// Counts a protobuf export; throws ``TooMany`` as soon as there are more than `limit`
    /// items or `maxValues` values.
    public func count(protobuf bytes: [UInt8], limit: Int, maxValues: Int = .max) throws -> Count {
        var items = 0
        try Self.walk(bytes[...], path: self.fields[...], limit: limit, total: &items)
        var values = 0
        guard try Self.values(in: bytes[...], depth: 0, maxValues: maxValues, total: &values) else {
            throw Malformed(reason: "not a protobuf message")
        }
        return Count(items: items, values: values)
    }

    /// Counts the fields of `path` inside `message`, descending into each level's fields.
    private static func walk(_ message: ArraySlice<UInt8>, path: ArraySlice<Set<UInt64>>, limit: Int, total: inout Int) throws {
        guard let wanted = path.first else { return }
        var index = message.startIndex
        while index < message.endIndex {
            let key = try Self.varint(message, &index)
            let field = key >> 3
            switch key & 7 {
            case 0: _ = try Self.varint(message, &index)
            case 1: index += 8
            case 5: index += 4
            case 2:
                let length = try Self.varint(message, &index)
                guard length <= UInt64(message.endIndex - index) else { throw Malformed(reason: "a field runs past the end of its message") }
                let end = index + Int(length)
                if wanted.contains(field) {
                    if path.count == 1 {
                        total += 1
                        if total > limit { throw TooMany(reason: "more than \(limit) items") }
                    } else {
                        try Self.walk(message[index..<end], path: path.dropFirst(), limit: limit, total: &total)
                    }
                }
                index = end
            default: throw Malformed(reason: "wire type \(key & 7) is not used by OTLP")
            }
            guard index <= message.endIndex else { throw Malformed(reason: "a field runs past the end of its message") }
        }
    }

    /// Adds the values `message` holds to `total` if it parses as a protobuf message (every
    /// field one value, a length-delimited field that parses as a message its values too, since
    /// a decoder builds them); false if it does not parse (a string or bytes: one value to the
    /// caller). Throws ``TooMany`` past `maxValues`.
    private static func values(in message: ArraySlice<UInt8>, depth: Int, maxValues: Int, total: inout Int) throws -> Bool {
        var index = message.startIndex
        var count = 0
        while index < message.endIndex {
            guard let key = try? Self.varint(message, &index), key >> 3 != 0 else { return false }
            switch key & 7 {
            case 0: guard (try? Self.varint(message, &index)) != nil else { return false }
            case 1: index += 8
            case 5: index += 4
            case 2:
                guard let length = try? Self.varint(message, &index), length <= UInt64(message.endIndex - index) else { return false }
                let end = index + Int(length)
                if depth < Self.maxDepth, end > index {
                    var nested = 0
                    if try Self.values(in: message[index..<end], depth: depth + 1, maxValues: maxValues - total - count, total: &nested) {
                        count += nested
                    }
                }
                index = end
            default: return false
            }
            guard index <= message.endIndex else { return false }
            count += 1
            if total + count > maxValues { throw TooMany(reason: "more than \(maxValues) values") }
        }
        total += count
        return true
    }

    private static func varint(_ bytes: ArraySlice<UInt8>, _ index: inout Int) throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.endIndex {
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
            guard shift < 64 else { break }
        }
        throw Malformed(reason: "a malformed varint")
    }
}
