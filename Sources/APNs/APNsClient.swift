import AsyncHTTPClient
import Foundation
public import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import ServiceKit

/// Sends pushes to APNs over HTTP/2 and TLS with token authentication.
///
/// One client is one team and key: its HTTP client keeps one HTTP/2 connection per
/// environment's host and multiplexes every push on it as concurrent streams (APNs allows one
/// stream until a first request with a valid token succeeds, then many). Every request has a
/// deadline (async-http-client can otherwise leave a request hanging after a GOAWAY, its issue
/// #660), and a connection that APNs ends with GOAWAY is replaced by a new one on the next
/// request. Notifications are validated before they are sent: nothing that APNs would refuse
/// for its form (size, collapse id, token, push type and priority) goes on the wire.
public final class APNsClient: Sendable {
    /// Where and how to reach APNs.
    public struct Configuration: Sendable {
        /// The base URL of each environment (Apple's hosts unless a local server replaces them).
        public var urls: [APNsEnvironment: String]
        /// How long one request may take, connection included.
        public var timeout: Duration
        /// CA certificates (PEM) to trust besides the system's, for a local APNs server.
        public var additionalCertificateAuthorityPEM: String?

        public init(
            urls: [APNsEnvironment: String] = Dictionary(uniqueKeysWithValues: APNsEnvironment.allCases.map { ($0, $0.appleURL) }),
            timeout: Duration = .seconds(10),
            additionalCertificateAuthorityPEM: String? = nil
        ) {
            self.urls = urls
            self.timeout = timeout
            self.additionalCertificateAuthorityPEM = additionalCertificateAuthorityPEM
        }
    }

    /// The largest error body read (APNs' are a few dozen bytes).
    static let maximumResponseBytes = 16 << 10

    /// The provider token every request carries.
    public let providerToken: APNsProviderToken
    private let configuration: Configuration
    private let http: HTTPClient
    private let logger: Logger

    public init(providerToken: APNsProviderToken, configuration: Configuration, logger: Logger) throws(APNsError) {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if let pem = configuration.additionalCertificateAuthorityPEM {
            do {
                tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))]
            } catch {
                throw APNsError(.invalidKey, "the APNs CA file is not PEM certificates: \(error)")
            }
        }
        var http = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            timeout: .init(connect: .nanoseconds(configuration.timeout.nanoseconds))
        )
        http.httpVersion = .automatic
        http.connectionPool = .init(idleTimeout: .minutes(55))
        http.decompression = .disabled
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
        self.providerToken = providerToken
        self.configuration = configuration
        self.logger = logger
    }

    /// Closes the connections.
    public func shutdown() async throws {
        try await self.http.shutdown()
    }

    /// Sends `notification` and answers APNs' response. A provider token that APNs rejects
    /// is renewed once (``APNsProviderToken/renew(rejected:now:)``) and the push sent again.
    ///
    /// - Throws: ``APNsError/Code/invalidNotification`` before sending anything that breaks
    ///   APNs' rules; ``APNsError/Code/transport`` when no answer came before the deadline or
    ///   the connection failed (the push may or may not have been delivered: retry it).
    public func send(_ notification: APNsNotification) async throws(APNsError) -> APNsResponse {
        try notification.validate()
        let token = self.providerToken.token()
        let response = try await self.post(notification, token: token)
        guard response.outcome == .providerTokenRejected, self.providerToken.renew(rejected: token) else { return response }
        self.logger.notice("APNs rejected the provider token; sending again with a new one", metadata: ["reason": "\(response.reason ?? "")"])
        return try await self.post(notification, token: self.providerToken.token())
    }

    private func post(_ notification: APNsNotification, token: String) async throws(APNsError) -> APNsResponse {
        guard let base = self.configuration.urls[notification.environment] else {
            throw APNsError(.transport, "no APNs URL for the \(notification.environment.rawValue) environment")
        }
        var request = HTTPClientRequest(url: base + "/3/device/" + notification.deviceToken)
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer " + token)
        request.headers.add(name: "apns-topic", value: notification.topic)
        request.headers.add(name: "apns-push-type", value: notification.pushType.rawValue)
        request.headers.add(name: "apns-priority", value: String(notification.priority.rawValue))
        request.headers.add(name: "apns-expiration", value: String(notification.expiration))
        request.headers.add(name: "apns-id", value: notification.apnsID.uuidString.lowercased())
        if let collapseID = notification.collapseID { request.headers.add(name: "apns-collapse-id", value: collapseID) }
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: notification.payload))
        do {
            let response = try await self.http.execute(request, deadline: .now() + .nanoseconds(self.configuration.timeout.nanoseconds))
            let body = try await response.body.collect(upTo: Self.maximumResponseBytes)
            let error = try? JSONDecoder().decode(ErrorBody.self, from: Data(buffer: body))
            return APNsResponse(
                status: Int(response.status.code),
                reason: error?.reason,
                timestamp: error?.timestamp,
                apnsID: response.headers.first(name: "apns-id")
            )
        } catch {
            throw APNsError(.transport, "APNs request failed: \(error)")
        }
    }

    /// APNs' error body.
    struct ErrorBody: Decodable {
        var reason: String?
        var timestamp: Int64?
    }
}
