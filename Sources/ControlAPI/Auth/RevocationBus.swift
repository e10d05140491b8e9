import Contracts
import Foundation
import Logging
import ServiceKit

/// Announces revoked devices on the revocations stream, which every service's
/// `RevocationFeed` follows: their access tokens are refused and their WebSockets closed.
struct RevocationBus: Sendable {
    let jetStream: JetStream
    let subjects: Subjects
    /// As long as the longest access token lives.
    let retention: Duration

    /// Creates the stream (before the server starts).
    func prepare() async throws {
        try await RevocationFeed.prepareStream(self.jetStream, subjects: self.subjects, retention: self.retention)
    }

    /// Publishes a revocation and waits until it is stored (a repeat is stored once).
    func announce(tenant: String, device: String, revokedAt: Date) async throws {
        let milliseconds = Int64(revokedAt.timeIntervalSince1970 * 1000)
        let notice = RevocationNotice(tenant: tenant, subject: device, revokedAt: milliseconds)
        _ = try await self.jetStream.publish(
            try JSONEncoder().encode(notice),
            to: self.subjects.revocation(tenant: tenant),
            messageID: "revoke-\(device)-\(milliseconds)"
        )
    }
}
