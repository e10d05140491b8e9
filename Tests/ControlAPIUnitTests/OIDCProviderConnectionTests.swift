import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import ControlAPI

@Suite("control-api's OpenID Connect client over a provider's connections")
struct OIDCProviderConnectionTests {
    @Test("a connection the provider closes before answering is sent again once on a new one; twice closed is a failure")
    func closedBeforeAnswer() async throws {
        for closing in [1, 2] {
            let connections = Atomic<Int>(0)
            let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { channel in
                    let number = connections.add(1, ordering: .relaxed).newValue
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(DiscoveryAnswerer(closesUnanswered: number <= closing))
                    }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            let issuer = "http://127.0.0.1:\(server.localAddress?.port ?? 0)"
            let settings = Result { try Self.settings(issuer: issuer) }
            let outcome: Result<OIDCProvider.Metadata, OIDCProvider.Failure>
            if case .success(let settings) = settings {
                let provider = OIDCProvider(settings: settings, logger: Logger(label: "test"))
                do {
                    outcome = .success(try await provider.discovery())
                } catch {
                    outcome = .failure(error)
                }
                try? await provider.shutdown()
            } else {
                outcome = .failure(.init("no settings"))
            }
            try await server.close()
            _ = try settings.get()
            switch (closing, outcome) {
            case (1, .success(let metadata)):
                #expect(metadata.issuer == issuer && metadata.tokenEndpoint == issuer + "/token")
                #expect(connections.load(ordering: .relaxed) == 2)
            case (2, .failure(let failure)):
                #expect(failure.description == "the sign-in provider did not answer")
                #expect(connections.load(ordering: .relaxed) == 2)
            default:
                Issue.record("closing \(closing) connection(s) gave \(outcome)")
            }
        }
    }

    static func settings(issuer: String) throws -> OIDCSettings {
        OIDCSettings(
            issuer: issuer,
            clientID: "swarmdeck-test",
            clientSecret: nil,
            redirectURI: "http://127.0.0.1:9/v1/auth/oidc/callback",
            returnURIs: [],
            tenant: "tenant-a",
            requestScopes: "openid",
            scopeMap: try OIDCScopeMap.parse(claim: "groups", defaults: "stream:read", map: "").get(),
            displayName: "Single sign-on",
            maxPendingLogins: 10
        )
    }
}

/// Reads a request to its blank line, then either closes the connection without a word or
/// answers a discovery document for the issuer it was asked at.
private final class DiscoveryAnswerer: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let closesUnanswered: Bool
    var seen = ""

    init(closesUnanswered: Bool) { self.closesUnanswered = closesUnanswered }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.seen += String(buffer: Self.unwrapInboundIn(data))
        guard self.seen.contains("\r\n\r\n") else { return }
        if self.closesUnanswered {
            context.close(promise: nil)
            return
        }
        let port = context.channel.localAddress?.port ?? 0
        let issuer = "http://127.0.0.1:\(port)"
        let endpoints = ["authorization_endpoint": "/authorize", "token_endpoint": "/token", "jwks_uri": "/jwks"].mapValues { issuer + $0 }
        let document = endpoints.merging(["issuer": issuer]) { $1 }
        let body = String(decoding: (try? JSONSerialization.data(withJSONObject: document)) ?? Data(), as: UTF8.self)
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        let channel = context.channel
        context.writeAndFlush(Self.wrapOutboundOut(ByteBuffer(string: head + body))).whenComplete { _ in channel.close(promise: nil) }
    }
}
