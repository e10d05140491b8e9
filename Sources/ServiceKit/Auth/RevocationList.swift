public import Foundation
import Synchronization

/// The credentials revoked while their access tokens may still be unexpired: a token of a
/// revoked subject issued at or before its revocation is refused, and the replica's open
/// WebSockets of that subject are closed (``WebSocketHeartbeats`` sweeps them). Filled by
/// ``RevocationFeed``; entries older than the longest token lifetime are dropped.
public final class RevocationList: Sendable {
    private struct State {
        var revokedAt: [String: Date] = [:]
    }

    private let state = Mutex(State())
    private let changes = Atomic<Int>(0)
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
            if state.revokedAt.count > 1024 { state.revokedAt = state.revokedAt.filter { $0.value > horizon } }
        }
        self.changes.add(1, ordering: .releasing)
    }

    /// Whether a token of `subject` in `tenant` issued at `issuedAt` was revoked.
    public func isRevoked(tenant: String, subject: String, issuedAt: Date) -> Bool {
        guard let revokedAt = self.state.withLock({ $0.revokedAt[Self.key(tenant, subject)] }) else { return false }
        return issuedAt <= revokedAt
    }

    /// Whether the identity's token was revoked.
    public func isRevoked(_ identity: AccessIdentity) -> Bool {
        self.isRevoked(tenant: identity.tenant, subject: identity.subject, issuedAt: identity.issuedAt)
    }

    /// Grows with every revocation: a sweep runs only when it changed.
    public var generation: Int { self.changes.load(ordering: .acquiring) }
}
