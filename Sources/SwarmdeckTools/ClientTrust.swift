public import AsyncHTTPClient
import Foundation
public import NIOSSL

/// What the command line's clients trust: the system's roots, and the certificate authority in
/// `$SWARMDECK_CA_FILE` when it is set (a staging edge whose certificate a private CA signed,
/// deploy/staging/secrets' `edge-ca.pem`).
public enum ClientTrust {
    /// The environment variable naming a PEM file of extra trusted certificate authorities.
    public static let environmentVariable = "SWARMDECK_CA_FILE"

    /// A client TLS configuration trusting, beside the system's roots, `caFile` (a PEM file of
    /// certificate authorities), or the one `$SWARMDECK_CA_FILE` names when `caFile` is nil.
    public static func tlsConfiguration(caFile: String? = nil) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let file = caFile ?? ProcessInfo.processInfo.environment[Self.environmentVariable], !file.isEmpty {
            tls.additionalTrustRoots = [.file(file)]
        }
        return tls
    }

    /// An HTTP client with ``tlsConfiguration(caFile:)``; shut it down when done.
    public static func httpClient(_ configuration: HTTPClient.Configuration = .init(), caFile: String? = nil) -> HTTPClient {
        var configuration = configuration
        configuration.tlsConfiguration = Self.tlsConfiguration(caFile: caFile)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }
}
