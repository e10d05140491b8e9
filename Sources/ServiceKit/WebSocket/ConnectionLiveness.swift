/// The heartbeat decisions of one connection: when to ping, when it has stalled, when the
/// client is gone. Pure: the connection feeds it what happened and acts on what it answers.
public struct ConnectionLiveness: Sendable {
    public enum Action: Sendable, Equatable {
        case none
        case ping
        /// Close with this reason: the client let two pings go unanswered.
        case gone
        /// Close: a write has waited longer than the stall limit.
        case stalled
    }

    public let pingInterval: Duration
    public let stalledAfter: Duration
    /// Whether client messages answer pings (else pings are frames whose answers are unseen).
    public let checksAnswers: Bool

    private var lastHeard: ContinuousClock.Instant
    private var lastHeardSeen: ContinuousClock.Instant
    private var lastPing: ContinuousClock.Instant
    private var pingsSinceHeard = 0
    private var writeStarted: ContinuousClock.Instant?

    public init(pingInterval: Duration, stalledAfter: Duration, checksAnswers: Bool, now: ContinuousClock.Instant) {
        self.pingInterval = pingInterval
        self.stalledAfter = stalledAfter
        self.checksAnswers = checksAnswers
        self.lastHeard = now
        self.lastHeardSeen = now
        self.lastPing = now
    }

    /// The client sent a message.
    public mutating func heard(at now: ContinuousClock.Instant) {
        self.lastHeard = now
    }

    /// A write to the socket began (it ends with ``wrote()``).
    public mutating func writing(since now: ContinuousClock.Instant) {
        if self.writeStarted == nil { self.writeStarted = now }
    }

    /// The socket accepted what was being written.
    public mutating func wrote() {
        self.writeStarted = nil
    }

    /// What to do at `now`.
    public mutating func tick(now: ContinuousClock.Instant) -> Action {
        if let started = self.writeStarted, now - started > self.stalledAfter { return .stalled }
        if self.lastHeard > self.lastHeardSeen {
            self.lastHeardSeen = self.lastHeard
            self.pingsSinceHeard = 0
        }
        guard now - self.lastPing >= self.pingInterval else { return .none }
        if self.checksAnswers && self.pingsSinceHeard >= 2 { return .gone }
        self.lastPing = now
        self.pingsSinceHeard += 1
        return .ping
    }
}
