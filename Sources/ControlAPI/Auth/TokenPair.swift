import Contracts
import Foundation

/// What a sign-in, a registration or a refresh gives a device: an access token and the refresh
/// token that replaces it.
struct TokenPair: Sendable {
    var accessToken: String
    /// How long the access token is valid.
    var accessLifetime: Duration
    var refreshToken: String
    var refreshExpiresAt: Date
    var deviceID: String
    var tenantID: String
    /// What the access token grants, sorted.
    var scopes: [Scope]
}
