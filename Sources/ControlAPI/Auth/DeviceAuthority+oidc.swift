import Foundation
import PostgresNIO
import ServiceKit

extension DeviceAuthority {
    /// Trades a provider sign-in's one-time code for a new device and its first tokens, once
    /// `verifier` proves the caller is the client that started the sign-in. The code is used
    /// up whatever the outcome, so it cannot be guessed at.
    func redeem(oidcCode code: String, verifier: String) async throws -> TokenPair {
        enum Outcome {
            case unknown
            case expired
            case wrongVerifier
            case signedIn(tenant: String, scopes: [String])
        }
        let signIn = self.newSignIn()
        let outcome: Outcome = try await self.client.withTransaction(logger: self.logger) { connection in
            let rows = try await connection.query(
                """
                DELETE FROM oidc_grants WHERE code_sha256 = \(Self.digest(code))
                RETURNING expires_at > now(), tenant_id, person, scopes, client_challenge, device_name, platform
                """,
                logger: self.logger
            )
            var found: (Bool, String, String, [String], String, String, String?)?
            for try await row in rows.decode((Bool, String, String, [String], String, String, String?).self) { found = row }
            guard let (live, tenant, person, scopes, challenge, name, platform) = found else { return .unknown }
            guard live else { return .expired }
            guard PKCE.verifies(verifier, challenge: challenge) else { return .wrongVerifier }
            try await connection.query("INSERT INTO tenants (tenant_id) VALUES (\(tenant)) ON CONFLICT DO NOTHING", logger: self.logger)
            try await self.store(signIn, tenant: tenant, deviceName: name, platform: platform, scopes: scopes, person: person, on: connection)
            return .signedIn(tenant: tenant, scopes: scopes)
        }
        switch outcome {
        case .unknown: throw APIError(.authInvalid, "the sign-in code is unknown or was used; sign in again")
        case .expired: throw APIError(.authExpired, "the sign-in code has expired; sign in again")
        case .wrongVerifier:
            throw APIError(.authInvalid, "the code verifier is not the one this sign-in started with; sign in again")
        case .signedIn(let tenant, let scopes):
            return try await self.pair(tenant: tenant, signIn: signIn, scopes: scopes)
        }
    }
}
