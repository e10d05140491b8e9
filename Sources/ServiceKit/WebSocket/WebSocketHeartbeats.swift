public import ServiceLifecycle
import Synchronization

/// Something the heartbeat visits: a connection.
public protocol Heartbeating: AnyObject, Sendable {
    /// Pings, checks liveness and stalls, ticks timers. Returns false once the connection is
    /// done (it is then forgotten).
    func heartbeat(now: ContinuousClock.Instant) -> Bool
}

/// One task for a whole replica that visits every connection four times a second, instead of
/// a timer task per connection (which costs memory per idle connection). Run it in the
/// service's `ServiceGroup`.
public final class WebSocketHeartbeats: Service, Sendable {
    private let members = Mutex<[ObjectIdentifier: any Heartbeating]>([:])
    private let interval: Duration

    public init(interval: Duration = .milliseconds(250)) {
        self.interval = interval
    }

    public func add(_ member: any Heartbeating) {
        self.members.withLock { $0[ObjectIdentifier(member)] = member }
    }

    public func remove(_ member: any Heartbeating) {
        _ = self.members.withLock { $0.removeValue(forKey: ObjectIdentifier(member)) }
    }

    /// How many connections it visits.
    public var count: Int { self.members.withLock { $0.count } }

    public func run() async throws {
        await repeatUntilShutdown(every: self.interval) {
            let now = ContinuousClock.now
            for member in self.members.withLock({ Array($0.values) }) where !member.heartbeat(now: now) {
                self.remove(member)
            }
        }
    }
}
