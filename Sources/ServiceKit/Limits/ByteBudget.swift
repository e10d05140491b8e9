import Synchronization

/// A process-wide budget of bytes that requests hold while they are read and parsed: a request
/// takes its share before it reads anything and gives it back when it is answered, so the
/// memory all requests in flight may cost at once is bounded whatever they send.
public final class ByteBudget: Sendable {
    /// The bytes all holders together may take.
    public let limit: Int
    private let used = Atomic<Int>(0)

    public init(limit: Int) {
        self.limit = limit
    }

    /// Takes `bytes` if they fit beside what is held; false (nothing taken) otherwise. A
    /// request larger than the whole budget never fits.
    public func reserve(_ bytes: Int) -> Bool {
        var current = self.used.load(ordering: .relaxed)
        while true {
            guard bytes <= self.limit - current else { return false }
            let (exchanged, original) = self.used.compareExchange(expected: current, desired: current + bytes, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
    }

    /// Gives back what ``reserve(_:)`` took.
    public func release(_ bytes: Int) {
        self.used.subtract(bytes, ordering: .acquiringAndReleasing)
    }

    /// The bytes held now.
    public var inUse: Int { self.used.load(ordering: .relaxed) }
}
