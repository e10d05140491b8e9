import ArgumentParser
import Foundation
import ServiceKit

/// What the benches that drive the running stack as an operator and an agent take: the edge, the
/// stack's signing key (they mint their own tokens), the tenant and its ingest key, and the
/// `swarmdeck` executable that runs their connector.
struct StackBenchOptions: ParsableArguments {
    @Option(help: "Edge base URL (the services behind it).")
    var url = "http://127.0.0.1:8080"

    @Option(help: "PEM file with the ES256 signing key: the bench mints its operators' tokens.")
    var keyFile = ".swarmdeck/keys/jwt-es256.pem"

    @Option(help: "Tenant of the ingest key.")
    var tenant = "dev"

    @Option(help: "Ingest key (default: $SWARMDECK_INGEST_KEY).")
    var key: String?

    @Option(help: "The swarmdeck executable that runs the connector.")
    var swarmdeck = ".build/release/swarmdeck"

    /// The ingest key given or in the environment.
    func ingestKey() throws -> String {
        guard let key = self.key ?? ProcessInfo.processInfo.environment["SWARMDECK_INGEST_KEY"] else {
            throw ValidationError("no ingest key: pass --key or source .swarmdeck/local.env")
        }
        return key
    }

    /// A signer with the stack's key and claims.
    func signer() async throws -> AccessTokenSigner {
        try await AccessTokenSigner(
            privateKeyPEM: try String(contentsOfFile: self.keyFile, encoding: .utf8),
            keyID: "swarmdeck-1",
            issuer: "swarmdeck",
            audience: "swarmdeck"
        )
    }
}
