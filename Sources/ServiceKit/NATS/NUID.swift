import Synchronization

/// Unique, unguessable-enough identifiers for inboxes and request tokens: a random 12-character
/// prefix per process plus a counter, in base 62 (the NUID scheme of the NATS clients).
enum NUID {
    private static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
    private static let prefix: String = {
        var generator = SystemRandomNumberGenerator()
        return String(decoding: (0..<12).map { _ in alphabet[Int(generator.next(upperBound: UInt64(62)))] }, as: UTF8.self)
    }()
    private static let counter = Atomic<UInt64>(0)

    /// The next identifier.
    static func next() -> String {
        var value = self.counter.add(1, ordering: .relaxed).newValue
        var digits: [UInt8] = []
        digits.reserveCapacity(11)
        repeat {
            digits.append(self.alphabet[Int(value % 62)])
            value /= 62
        } while value > 0
        return self.prefix + String(decoding: digits.reversed(), as: UTF8.self)
    }
}
