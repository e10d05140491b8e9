public import Foundation
import Synchronization

/// The credentials revoked while their access tokens may still be unexpired: every token of a
/// revoked subject is refused (a device id is never reused: enrolling again makes a new one,
/// so no clock comparison is needed), and the replica's open WebSockets of that subject are
/// closed (``WebSocketHeartbeats`` sweeps them). Filled by ``RevocationFeed``; entries older
/// than the longest token lifetime are dropped.
public final class RevocationList: Sendable {
    private struct State {
        var revokedAt: [String: Date] = [:]
        /// Pruned when it grows past this: twice what the last pruning kept (amortized).
        var pruneAt = 1024
    }

    private let state = Mutex(State())
    private let changes = Atomic<Int>(0)
    private let loaded = Atomic<Bool>(false)
    /// How long an entry matters: the longest an access token lives.
    public let retention: TimeInterval

    public init(retention: Duration = .seconds(86_400)) {
        self.retention = TimeInterval(retention.components.seconds)
    }

    private static func key(_ tenant: String, _ subject: String) -> String { tenant + "\u{0}" + subject }

    /// Records a revocation (a later one for the same subject wins).
    public func revoke(tenant: String, subject: String, at date: Date) {
        self.state.withLock { state in
            let key = Self.key(tenant, subject)
            state.revokedAt[key] = max(state.revokedAt[key] ?? date, date)
            let horizon = Date().addingTimeInterval(-self.retention)
            if state.revokedAt.count > state.pruneAt {
                state.revokedAt = state.revokedAt.filter { $0.value > horizon }
                state.pruneAt = max(1024, state.revokedAt.count * 2)
            }
        }
        self.changes.add(1, ordering: .releasing)
    }

    /// Whether `subject` of `tenant` was revoked (within the retention).
    public func isRevoked(tenant: String, subject: String) -> Bool {
        self.state.withLock { $0.revokedAt[Self.key(tenant, subject)] != nil }
    }

    /// Whether the identity's subject was revoked.
    public func isRevoked(_ identity: AccessIdentity) -> Bool {
        self.isRevoked(tenant: identity.tenant, subject: identity.subject)
    }

    /// Whether the feed has read the revocations stream to its end once (the replica's
    /// readiness waits for it, so a new replica never serves a revoked device's token).
    public var isLoaded: Bool { self.loaded.load(ordering: .acquiring) }

    /// Called by the feed once it has read everything stored.
    public func markLoaded() { self.loaded.store(true, ordering: .releasing) }

    /// Grows with every revocation: a sweep runs only when it changed.
    public var generation: Int { self.changes.load(ordering: .acquiring) }
}
