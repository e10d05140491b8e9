import ServiceLifecycle

/// The wake-ups of a worker that runs in rounds: at once when work is added (``kick()``) and
/// every `interval` besides (work that comes due, a kick lost to a crash elsewhere). Kicks that
/// come while a round runs fold into one more round.
public final class WakeUps: Sendable {
    /// The longest time between two rounds.
    public let interval: Duration
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    public init(every interval: Duration) {
        self.interval = interval
        (self.stream, self.continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Work was added: a round starts now, or right after the one running.
    public func kick() {
        self.continuation.yield()
    }

    /// Runs `round` at each wake-up until graceful shutdown or cancellation (a round in
    /// progress finishes or sees its cancellation); a round that answers true (it did a full
    /// batch: more may wait) is followed by another at once. Call it once.
    public func run(_ round: @escaping @Sendable () async -> Bool) async {
        let continuation = self.continuation
        let interval = self.interval
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                continuation.yield()
            }
        }
        defer { ticker.cancel() }
        await cancelWhenGracefulShutdown {
            for await _ in self.stream {
                if await round() { continuation.yield() }
                if Task.isCancelled { return }
            }
        }
    }
}
