import CNATS

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// NATS message headers: names with one or more values, in insertion order.
public struct NATSHeaders: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// The name/value pairs; a name may repeat.
    public private(set) var fields: [(name: String, value: String)]

    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { (name: $0.0, value: $0.1) }
    }

    public var isEmpty: Bool { self.fields.isEmpty }

    /// The first value of `name` (case-sensitive, as NATS headers are).
    public subscript(name: String) -> String? {
        get { self.fields.first { $0.name == name }?.value }
        set {
            self.fields.removeAll { $0.name == name }
            if let newValue { self.fields.append((name: name, value: newValue)) }
        }
    }

    /// Adds a value, keeping the ones already there.
    public mutating func add(_ name: String, _ value: String) {
        self.fields.append((name: name, value: value))
    }

    public static func == (lhs: NATSHeaders, rhs: NATSHeaders) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for field in self.fields {
            hasher.combine(field.name)
            hasher.combine(field.value)
        }
    }

    /// Reads the headers of a C message.
    init(reading message: OpaquePointer) {
        self.fields = []
        var keys: UnsafeMutablePointer<UnsafePointer<CChar>?>?
        var keyCount: Int32 = 0
        guard natsMsgHeader_Keys(message, &keys, &keyCount) == NATS_OK, let keys else { return }
        defer { free(keys) }
        for index in 0..<Int(keyCount) {
            guard let key = keys[index] else { continue }
            var values: UnsafeMutablePointer<UnsafePointer<CChar>?>?
            var valueCount: Int32 = 0
            guard natsMsgHeader_Values(message, key, &values, &valueCount) == NATS_OK, let values else { continue }
            defer { free(values) }
            let name = String(cString: key)
            for valueIndex in 0..<Int(valueCount) {
                if let value = values[valueIndex] {
                    self.fields.append((name: name, value: String(cString: value)))
                }
            }
        }
    }

    /// Writes the headers onto a C message.
    func write(to message: OpaquePointer) -> natsStatus {
        for field in self.fields {
            let status = natsMsgHeader_Add(message, field.name, field.value)
            if status != NATS_OK { return status }
        }
        return NATS_OK
    }
}
