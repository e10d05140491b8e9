import ArgumentParser
import Contracts
import ServiceKit

/// The signing key and the claims the services expect: what every command that signs a token
/// itself (`token mint`, `tenant create`) takes.
struct SigningKeyOptions: ParsableArguments {
    @Option(name: .long, help: "PEM file with the ES256 private key (see token keygen).")
    var keyFile: String

    @Option(help: "Issuer (auth.jwt.issuer of the services).")
    var issuer = "swarmdeck"

    @Option(help: "Audience (auth.jwt.audience of the services).")
    var audience = "swarmdeck"

    @Option(help: "Key id (auth.jwt.key-id of the services).")
    var keyID = "swarmdeck-1"

    /// A signer with the key and claims given.
    func signer() async throws -> AccessTokenSigner {
        let pem = try String(contentsOfFile: self.keyFile, encoding: .utf8)
        return try await AccessTokenSigner(privateKeyPEM: pem, keyID: self.keyID, issuer: self.issuer, audience: self.audience)
    }

    /// Throws a usage error naming the first scope that is not one.
    static func checkScopes(_ names: [String]) throws {
        for scope in names where Scope(rawValue: scope) == nil {
            throw ValidationError("unknown scope '\(scope)'; known: \(Scope.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }
}
