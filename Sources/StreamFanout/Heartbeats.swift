import ServiceKit
import ServiceLifecycle
import Synchronization

/// Something the replica's heartbeat visits: a connection.
protocol Heartbeating: AnyObject, Sendable {
    /// Pings, checks liveness and stalls, ticks timers. Returns false once the connection is
    /// done (it is then forgotten).
    func heartbeat(now: ContinuousClock.Instant) -> Bool
}

/// One task for the whole replica that visits every connection four times a second, instead
/// of a timer task per connection (which costs memory per idle connection).
final class Heartbeats: Service, Sendable {
    private let members = Mutex<[ObjectIdentifier: any Heartbeating]>([:])

    func add(_ member: any Heartbeating) {
        self.members.withLock { $0[ObjectIdentifier(member)] = member }
    }

    func remove(_ member: any Heartbeating) {
        _ = self.members.withLock { $0.removeValue(forKey: ObjectIdentifier(member)) }
    }

    func run() async throws {
        await repeatUntilShutdown(every: .milliseconds(250)) {
            let now = ContinuousClock.now
            for member in self.members.withLock({ Array($0.values) }) where !member.heartbeat(now: now) {
                self.remove(member)
            }
        }
    }
}
