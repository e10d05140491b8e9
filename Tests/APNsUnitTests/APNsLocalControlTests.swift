import APNsLocal
import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOSSL
import Testing

@Suite("apns-local's control paths answer only its control token")
struct APNsLocalControlTests {
    @Test("no token, a wrong one, or a server without one: 403; the token: the pushes")
    func controlToken() async throws {
        let key = P256.Signing.PrivateKey()
        let authority = try LocalCertificateAuthority()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(authority.certificateAuthorityPEM.utf8)))]
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        for token in ["0123456789abcdef0123456789abcdef", nil] {
            let server = APNsLocalServer(
                configuration: .init(
                    keys: [APNsLocalKey(keyID: "KEY1234567", teamID: "TEAM123456", publicKey: key.publicKey)],
                    authority: authority,
                    controlToken: token
                ),
                logger: Logger(label: "apns-local")
            )
            let port = try await server.start()
            func status(_ method: String, _ path: String, bearer: String?) async throws -> Int {
                var request = HTTPClientRequest(url: "https://localhost:\(port)\(path)")
                request.method = .init(rawValue: method)
                if let bearer { request.headers.add(name: "authorization", value: "Bearer " + bearer) }
                let response = try await http.execute(request, timeout: .seconds(10))
                _ = try await response.body.collect(upTo: 1 << 20)
                return Int(response.status.code)
            }
            for (method, path) in [("GET", "/_local/pushes"), ("DELETE", "/_local/rules"), ("POST", "/_local/rules")] {
                #expect(try await status(method, path, bearer: nil) == 403, "\(method) \(path)")
                #expect(try await status(method, path, bearer: "0123456789abcdef0123456789abcdeX") == 403, "\(method) \(path)")
            }
            if let token {
                #expect(try await status("GET", "/_local/pushes", bearer: token) == 200)
                #expect(try await status("DELETE", "/_local/rules", bearer: token) == 204)
            } else {
                #expect(try await status("GET", "/_local/pushes", bearer: "") == 403)
            }
            try await server.stop()
        }
        try await http.shutdown()
    }
}
