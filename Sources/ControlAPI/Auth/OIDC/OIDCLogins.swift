import Foundation
import Logging
import PostgresNIO
import ServiceKit

/// Sign-ins through the provider while they are under way, in Postgres (any replica may get
/// the provider's callback): a login from its start until the callback, then a one-time code
/// until the client trades it. Only digests of the state and the code are stored.
struct OIDCLogins: Sendable {
    /// What a login keeps until the provider sends the browser back.
    struct Pending: Sendable, Equatable {
        var tenant: String
        /// The PKCE verifier between control-api and the provider.
        var verifier: String
        var nonce: String
        var returnURI: String
        /// The client's own state, given back with its code.
        var clientState: String?
        /// The PKCE challenge between the client and control-api.
        var clientChallenge: String
        var deviceName: String
        var platform: String?
    }

    let client: PostgresClient
    let logger: Logger

    /// How long a login waits for the provider's callback.
    static let loginLifetime: Duration = .seconds(600)
    /// How long a sign-in code waits for its client.
    static let codeLifetime: Duration = .seconds(120)

    /// Logins one source (``ClientAddress/limitKey(_:)``) may have waiting.
    static let maxPendingPerSource = 20

    /// Stores `pending` under `state`; refused (429) while `maxPending` logins wait, or
    /// ``maxPendingPerSource`` of `source`'s. Logins and codes past their time are deleted first.
    func begin(_ pending: Pending, state: String, source: String, maxPending: Int) async throws -> Date {
        let expiresAt = Date().addingTimeInterval(TimeInterval(Self.loginLifetime.components.seconds))
        let stored = try await self.client.withTransaction(logger: self.logger) { connection -> Bool in
            // Starts are serialised, so the count holds the bound (they are few: each is limited per source).
            try await connection.perform("SELECT pg_advisory_xact_lock(hashtext('control.oidc_logins'))", logger: self.logger)
            try await connection.query("DELETE FROM oidc_logins WHERE expires_at <= now()", logger: self.logger)
            try await connection.query("DELETE FROM oidc_grants WHERE expires_at <= now()", logger: self.logger)
            let rows = try await connection.query(
                "SELECT count(*), count(*) FILTER (WHERE source = \(source)) FROM oidc_logins",
                logger: self.logger
            )
            var waiting = (all: 0, mine: 0)
            for try await (all, mine) in rows.decode((Int, Int).self) { waiting = (all, mine) }
            guard waiting.all < maxPending, waiting.mine < Self.maxPendingPerSource else { return false }
            try await connection.query(
                """
                INSERT INTO oidc_logins (state_sha256, tenant_id, verifier, nonce, return_uri, client_state, client_challenge,
                                         device_name, platform, expires_at, source)
                VALUES (\(DeviceAuthority.digest(state)), \(pending.tenant), \(pending.verifier), \(pending.nonce), \(pending.returnURI),
                        \(pending.clientState), \(pending.clientChallenge), \(pending.deviceName), \(pending.platform), \(expiresAt),
                        \(source))
                """,
                logger: self.logger
            )
            return true
        }
        guard stored else {
            throw APIError(.rateLimited, "too many sign-ins are under way; retry in a minute", retryAfterSeconds: 60)
        }
        return expiresAt
    }

    /// The login `state` names, taken (it works once); nil when unknown, used or expired.
    func take(state: String) async throws -> Pending? {
        let rows = try await self.client.write(
            """
            DELETE FROM oidc_logins WHERE state_sha256 = \(DeviceAuthority.digest(state))
            RETURNING expires_at > now(), tenant_id, verifier, nonce, return_uri, client_state, client_challenge, device_name, platform
            """,
            logger: self.logger
        )
        guard let row = rows.first else { return nil }
        let (live, tenant, verifier, nonce, returnURI, clientState, challenge, name, platform) = try row.decode(
            (Bool, String, String, String, String, String?, String, String, String?).self
        )
        guard live else { return nil }
        return Pending(
            tenant: tenant,
            verifier: verifier,
            nonce: nonce,
            returnURI: returnURI,
            clientState: clientState,
            clientChallenge: challenge,
            deviceName: name,
            platform: platform
        )
    }

    /// A one-time code for `login`'s client, signing `person` in with `scopes`.
    func grant(_ login: Pending, person: String, scopes: [String]) async throws -> String {
        let code = "sdo_" + randomHex(bytes: 24)
        let expiresAt = Date().addingTimeInterval(TimeInterval(Self.codeLifetime.components.seconds))
        _ = try await self.client.write(
            """
            INSERT INTO oidc_grants (code_sha256, tenant_id, person, scopes, client_challenge, device_name, platform, expires_at)
            VALUES (\(DeviceAuthority.digest(code)), \(login.tenant), \(person), \(scopes), \(login.clientChallenge), \(login.deviceName),
                    \(login.platform), \(expiresAt))
            """,
            logger: self.logger
        )
        return code
    }
}
