/// A per-minute limit (a token bucket, full at first, one token back every 60/`perMinute`
/// seconds) seen from outside, for live tests of limits.
///
/// On a loaded machine the calls themselves take long enough for tokens to come back, so a test
/// that expects the refusal at a fixed call fails for no fault of the limit. Instead it counts
/// the calls admitted until the first refusal against what the bucket may admit in the time
/// they took: at least its capacity, at most that plus what came back, plus one for the token
/// due when the probe began.
public struct BucketProbe: Sendable {
    /// The bucket's rate and capacity.
    public let perMinute: Int
    private let started: ContinuousClock.Instant

    /// A probe of a bucket that is full now (nothing has taken from it yet).
    public init(perMinute: Int) {
        self.perMinute = perMinute
        self.started = .now
    }

    /// The seconds since the probe began.
    public var seconds: Double { (ContinuousClock.now - self.started) / .seconds(1) }

    /// The most a bucket full when the probe began can have admitted by now.
    public var mostAdmitted: Int { self.perMinute + Int(self.seconds * Double(self.perMinute) / 60) + 1 }

    /// Calls `attempt` (with the call's index) until it answers false (refused) or more calls
    /// were admitted than the bucket can have admitted; `admitted` counts the calls before the
    /// refusal, `refused` whether one came.
    public func untilRefused(
        from first: Int = 0,
        _ attempt: (_ index: Int) async throws -> Bool
    ) async rethrows -> (admitted: Int, refused: Bool) {
        var index = first
        while index <= self.mostAdmitted {
            if try await !attempt(index) { return (index, true) }
            index += 1
        }
        return (index, false)
    }

    /// Whether `admitted` calls before a refusal fit the bucket: at least its capacity, at most
    /// ``mostAdmitted``.
    public func fits(_ admitted: Int) -> Bool {
        admitted >= self.perMinute && admitted <= self.mostAdmitted
    }
}
