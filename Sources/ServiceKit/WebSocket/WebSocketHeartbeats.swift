public import ServiceLifecycle
import Synchronization

/// Something the heartbeat visits: a connection.
public protocol Heartbeating: AnyObject, Sendable {
    /// Pings, checks liveness and stalls, ticks timers. Returns false once the connection is
    /// done (it is then forgotten).
    func heartbeat(now: ContinuousClock.Instant) -> Bool
    /// Closes the connection if its credential is in `revocations`.
    func checkRevocation(_ revocations: RevocationList)
}

extension Heartbeating {
    public func checkRevocation(_ revocations: RevocationList) {}
}

/// One task for a whole replica that visits every connection four times a second, instead of
/// a timer task per connection (which costs memory per idle connection), and, after each new
/// revocation, closes the connections of revoked devices. Run it in the service's
/// `ServiceGroup`.
public final class WebSocketHeartbeats: Service, Sendable {
    private let members = Mutex<[ObjectIdentifier: any Heartbeating]>([:])
    private let interval: Duration
    private let revocations: RevocationList?
    private let sweptGeneration = Atomic<Int>(0)

    public init(interval: Duration = .milliseconds(250), revocations: RevocationList? = nil) {
        self.interval = interval
        self.revocations = revocations
    }

    public func add(_ member: any Heartbeating) {
        self.members.withLock { $0[ObjectIdentifier(member)] = member }
        // A revocation swept between its authentication and now would otherwise miss it.
        if let revocations = self.revocations { member.checkRevocation(revocations) }
    }

    public func remove(_ member: any Heartbeating) {
        _ = self.members.withLock { $0.removeValue(forKey: ObjectIdentifier(member)) }
    }

    /// How many connections it visits.
    public var count: Int { self.members.withLock { $0.count } }

    public func run() async throws {
        await repeatUntilShutdown(every: self.interval) {
            let now = ContinuousClock.now
            // The generation is read before the members: a revocation after it is swept next time.
            let generation = self.revocations?.generation
            let members = self.members.withLock { Array($0.values) }
            if let revocations = self.revocations, let generation {
                if self.sweptGeneration.exchange(generation, ordering: .relaxed) != generation {
                    for member in members { member.checkRevocation(revocations) }
                }
            }
            for member in members where !member.heartbeat(now: now) {
                self.remove(member)
            }
        }
    }
}
