import Contracts
import Foundation

/// A device of a tenant: an enrolled phone or client, or one an OpenID Connect sign-in made.
struct Device: Sendable {
    var deviceID: String
    var name: String
    var platform: String?
    /// Who signed in, for a device made by an OpenID Connect sign-in.
    var person: String?
    var scopes: [Scope]
    var createdAt: Date
    var revokedAt: Date?
}
