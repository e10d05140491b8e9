import EventLog

/// Appends JSON to a byte buffer: the frames are written by hand, once per event, because they
/// are on the hot path.
struct JSONWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 256) {
        self.bytes.reserveCapacity(capacity)
    }

    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { self.bytes.append(contentsOf: $0) }
    }

    /// A JSON string, escaped as every frame's strings are (`EventFrame.appendEscaped`).
    mutating func string(_ value: String) {
        self.bytes.append(UInt8(ascii: "\""))
        EventFrame.appendEscaped(value, to: &self.bytes)
        self.bytes.append(UInt8(ascii: "\""))
    }

    mutating func number(_ value: Double) {
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 {
            self.bytes.append(contentsOf: String(Int64(value)).utf8)
        } else if value.isFinite {
            self.bytes.append(contentsOf: String(value).utf8)
        } else {
            self.raw("null")
        }
    }

    mutating func integer(_ value: Int64) {
        self.bytes.append(contentsOf: String(value).utf8)
    }

    mutating func bool(_ value: Bool) {
        value ? self.raw("true") : self.raw("false")
    }

    /// `,"key":` — every field after the first.
    mutating func key(_ key: StaticString) {
        self.bytes.append(UInt8(ascii: ","))
        self.bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { self.bytes.append(contentsOf: $0) }
        self.bytes.append(UInt8(ascii: "\""))
        self.bytes.append(UInt8(ascii: ":"))
    }

    mutating func value(_ value: JSONValue) {
        switch value {
        case .null: self.raw("null")
        case .bool(let bool): self.bool(bool)
        case .number(let number): self.number(number)
        case .string(let string): self.string(string)
        case .array(let array):
            self.bytes.append(UInt8(ascii: "["))
            for (index, element) in array.enumerated() {
                if index > 0 { self.bytes.append(UInt8(ascii: ",")) }
                self.value(element)
            }
            self.bytes.append(UInt8(ascii: "]"))
        case .object(let fields):
            self.bytes.append(UInt8(ascii: "{"))
            for (index, (key, element)) in fields.enumerated() {
                if index > 0 { self.bytes.append(UInt8(ascii: ",")) }
                self.string(key)
                self.bytes.append(UInt8(ascii: ":"))
                self.value(element)
            }
            self.bytes.append(UInt8(ascii: "}"))
        }
    }
}
