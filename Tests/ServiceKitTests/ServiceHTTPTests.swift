import Contracts
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import Logging
import PostgresNIO
import ServiceKit
import Synchronization
import TestSupport
import Testing
import _ConnectionPoolModule

@Suite("Service HTTP: envelope, request id, auth, health (in-process)")
struct ServiceHTTPTests {
    static let issuer = "swarmdeck-test"
    static let audience = "swarmdeck"
    static let keyPair = AccessTokenSigner.generateKeyPair()

    static func verifier() async throws -> AccessTokenVerifier {
        try await AccessTokenVerifier(publicKeys: ["k1": keyPair.publicKey], issuer: issuer, audience: audience)
    }

    static func signer(
        privateKey: String = keyPair.privateKey,
        issuer: String = issuer,
        audience: String = audience
    ) async throws -> AccessTokenSigner {
        try await AccessTokenSigner(privateKeyPEM: privateKey, keyID: "k1", issuer: issuer, audience: audience)
    }

    /// A router as a service builds it, with one protected route echoing the identity.
    static func application(readiness: [ReadinessCheck] = [], log: CapturedLog? = nil) async throws -> some ApplicationProtocol {
        let router = Router.service()
        router.addOperationalRoutes(readiness: readiness)
        // A protected route that fails after authentication.
        router.group("v1/tenant-crash")
            .add(middleware: AuthenticationMiddleware(verifier: try await verifier(), requiring: .streamRead))
            .get { _, _ -> String in
                throw ServiceKitError(.natsTimeout, "no reply within 5s")
            }
        // The same behind a middleware outside the authenticator that answers failures itself
        // (as ingest's OTLP receiver does), through the envelope's log.
        router.group("v1/tenant-own-failure")
            .add(middleware: OwnFailureMiddleware())
            .add(middleware: AuthenticationMiddleware(verifier: try await verifier(), requiring: .streamRead))
            .get { _, _ -> String in
                throw ServiceKitError(.natsTimeout, "no reply within 5s")
            }
        router.group("v1/whoami")
            .add(middleware: AuthenticationMiddleware(verifier: try await verifier(), requiring: .streamRead))
            .get { _, context in
                let identity = try context.requireIdentity()
                return "\(identity.tenant)/\(identity.subject)/\(identity.scopes.map(\.rawValue).sorted().joined(separator: ","))"
            }
        // What a request's log lines carry as correlation.
        router.get("v1/log-metadata") { _, context -> String in
            "\(context.logger[metadataKey: "request_id"].map { "\($0)" } ?? "-") \(context.logger[metadataKey: "trace_id"].map { "\($0)" } ?? "-")"
        }
        router.post("v1/fail") { _, _ -> String in
            throw APIError(.invalidRequest, "reason is too long", details: ["reason": "at most 500 characters"])
        }
        router.get("v1/nats-down") { _, _ -> String in
            throw ServiceKitError(.natsTimeout, "no reply from $JS.API.STREAM.INFO.SECRET_STREAM within 5s")
        }
        // Waits until its task is cancelled.
        router.get("v1/slow") { _, _ -> String in
            try await Task.sleep(for: .seconds(600))
            return "late"
        }
        // A cancellation that is not the request's: a task of its own, cancelled.
        router.get("v1/inner-cancelled") { _, _ -> String in
            let inner = Task { try await Task.sleep(for: .seconds(600)) }
            inner.cancel()
            try await inner.value
            return "late"
        }
        router.get("v1/crash") { _, _ -> String in
            struct Secret: Error { let password = "hunter2" }
            throw Secret()
        }
        guard let log else { return Application(router: router) }
        return Application(router: router, logger: log.logger)
    }

    static func envelope(_ response: TestResponse) throws -> ErrorEnvelope.Body {
        try JSONDecoder().decode(ErrorEnvelope.self, from: Data(buffer: response.body)).error
    }

    @Test("a valid token with the scope passes and yields tenant, subject and scopes")
    func validToken() async throws {
        let token = try await Self.signer().sign(tenant: "acme", subject: "op-1", scopes: [.streamRead, .agentsControl])
        try await Self.application().test(.router) { client in
            try await client.execute(uri: "/v1/whoami", method: .get, headers: [.authorization: "Bearer \(token)"]) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == "acme/op-1/agents:control,stream:read")
            }
        }
    }

    /// Tokens that must be refused, and the code each gets.
    static func badTokens() async throws -> [(String, String, ErrorCode, HTTPResponse.Status)] {
        let now = Date()
        let expired = try await signer().sign(
            tenant: "acme",
            subject: "op",
            scopes: [.streamRead],
            lifetime: .seconds(60),
            now: now.addingTimeInterval(-3600)
        )
        let wrongIssuer = try await signer(issuer: "someone-else").sign(tenant: "acme", subject: "op", scopes: [.streamRead])
        let wrongAudience = try await signer(audience: "other-app").sign(tenant: "acme", subject: "op", scopes: [.streamRead])
        let wrongKey = try await signer(privateKey: AccessTokenSigner.generateKeyPair().privateKey).sign(
            tenant: "acme",
            subject: "op",
            scopes: [.streamRead]
        )
        let noScope = try await signer().sign(tenant: "acme", subject: "op", scopes: [.terminalAttach])

        // alg: none — an unsigned token with valid claims.
        let claims = try JSONEncoder().encode(
            AccessClaims(
                issuer: issuer,
                audience: audience,
                subject: "op",
                expiration: now.addingTimeInterval(600),
                issuedAt: now,
                id: "j",
                tenant: "acme",
                scope: "stream:read"
            )
        )
        let none = base64URL(Data(#"{"alg":"none","kid":"k1","typ":"JWT"}"#.utf8)) + "." + base64URL(claims) + "."
        // HS256 keyed with the public key's PEM: the classic algorithm-confusion attack.
        let confusion = JWTKeyCollection()
        await confusion.add(hmac: HMACKey(from: keyPair.publicKey), digestAlgorithm: .sha256, kid: "k1")
        let hs256 = try await confusion.sign(
            AccessClaims(
                issuer: issuer,
                audience: audience,
                subject: "op",
                expiration: now.addingTimeInterval(600),
                issuedAt: now,
                id: "j",
                tenant: "acme",
                scope: "stream:read"
            ),
            kid: "k1"
        )
        return [
            ("expired", "Bearer \(expired)", .authExpired, .unauthorized),
            ("wrong issuer", "Bearer \(wrongIssuer)", .authInvalid, .unauthorized),
            ("wrong audience", "Bearer \(wrongAudience)", .authInvalid, .unauthorized),
            ("wrong key", "Bearer \(wrongKey)", .authInvalid, .unauthorized),
            ("alg none", "Bearer \(none)", .authInvalid, .unauthorized),
            ("HS256 with the public key", "Bearer \(hs256)", .authInvalid, .unauthorized),
            ("garbage", "Bearer not.a.token", .authInvalid, .unauthorized),
            ("not bearer", "Basic dXNlcjpwYXNz", .authInvalid, .unauthorized),
            ("missing scope", "Bearer \(noScope)", .permissionDenied, .forbidden),
        ]
    }

    @Test("expired, forged, confused and under-scoped tokens are refused in the error envelope")
    func refusedTokens() async throws {
        let cases = try await Self.badTokens()
        try await Self.application().test(.router) { client in
            for (name, authorization, code, status) in cases {
                try await client.execute(uri: "/v1/whoami", method: .get, headers: [.authorization: authorization]) { response in
                    #expect(response.status == status, "\(name)")
                    let body = try Self.envelope(response)
                    #expect(body.code == code, "\(name)")
                    #expect(body.errorClass == code.errorClass, "\(name)")
                }
            }
            try await client.execute(uri: "/v1/whoami", method: .get) { response in
                #expect(response.status == .unauthorized)
                let body = try Self.envelope(response)
                #expect(body.code == .authInvalid)
                #expect(response.headers[.wwwAuthenticate] != nil)
            }
        }
    }

    @Test("x-request-id is echoed when valid, generated otherwise, and carried into error envelopes")
    func requestID() async throws {
        try await Self.application().test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get, headers: [.requestID: "abc-123"]) { response in
                #expect(response.headers[.requestID] == "abc-123")
            }
            try await client.execute(uri: "/healthz", method: .get, headers: [.requestID: "bad id\" with quotes"]) { response in
                let generated = try #require(response.headers[.requestID])
                #expect(generated != "bad id\" with quotes")
                #expect(UUID(uuidString: generated) != nil)
            }
            try await client.execute(uri: "/v1/fail", method: .post, headers: [.requestID: "req-9"]) { response in
                #expect(response.status == .badRequest)
                #expect(response.headers[.requestID] == "req-9")
                let body = try Self.envelope(response)
                #expect(body.requestId == "req-9")
                #expect(body.code == .invalidRequest)
                #expect(body.details == ["reason": "at most 500 characters"])
            }
        }
    }

    @Test("a valid traceparent's trace id goes into the request's log metadata beside its request id; an invalid one does not")
    func traceInLogs() async throws {
        try await Self.application().test(.router) { client in
            let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            try await client.execute(uri: "/v1/log-metadata", method: .get, headers: [.requestID: "r-1", .traceParent: trace]) { response in
                #expect(String(buffer: response.body) == "r-1 4bf92f3577b34da6a3ce929d0e0e4736")
            }
            try await client.execute(uri: "/v1/log-metadata", method: .get, headers: [.requestID: "r-2", .traceParent: "00-xyz"]) { response in
                #expect(String(buffer: response.body) == "r-2 -")
            }
        }
    }

    @Test("unknown routes and unexpected errors answer in the envelope without leaking details")
    func envelopeForEverything() async throws {
        try await Self.application().test(.router) { client in
            try await client.execute(uri: "/v1/nothing-here", method: .get) { response in
                #expect(response.status == .notFound)
                let body = try Self.envelope(response)
                #expect(body.code == .notFound)
            }
            try await client.execute(uri: "/v1/nats-down", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let body = try Self.envelope(response)
                #expect(body.code == .serviceUnavailable)
                #expect(body.retryable)
                #expect(!String(buffer: response.body).contains("SECRET_STREAM"))
            }
            try await client.execute(uri: "/v1/crash", method: .get) { response in
                #expect(response.status == .internalServerError)
                let body = try Self.envelope(response)
                #expect(body.code == .serverError)
                #expect(!String(buffer: response.body).contains("hunter2"))
            }
        }
    }

    @Test("a request whose task is cancelled answers 503 with Retry-After, not 500; a cancellation of a task of its own stays a 500")
    func cancelledRequest() async throws {
        try await Self.application().test(.router) { client in
            let request = Task {
                try await client.execute(uri: "/v1/slow", method: .get) { response in
                    (response.status, try Self.envelope(response))
                }
            }
            try await Task.sleep(for: .milliseconds(200))
            request.cancel()
            let (status, body) = try await request.value
            #expect(status == .serviceUnavailable)
            #expect(body.code == .serviceUnavailable && body.retryAfterSeconds == 1, "\(body)")
            try await client.execute(uri: "/v1/inner-cancelled", method: .get) { response in
                #expect(response.status == .internalServerError)
                let body = try Self.envelope(response)
                #expect(body.code == .serverError)
            }
        }
        #expect(!ErrorEnvelopeMiddleware.isCancellation(APIError(.serviceUnavailable, "slow")))
    }

    @Test(
        "the edge's log of a failed request: the tenant once authenticated (also when a middleware outside the authenticator answers it); a cancelled request at debug, not as an error"
    )
    func failureLog() async throws {
        let log = CapturedLog()
        let token = try await Self.signer().sign(tenant: "acme-log", subject: "phone", scopes: [.streamRead])
        try await Self.application(log: log).test(.router) { client in
            for uri in ["/v1/tenant-crash", "/v1/tenant-own-failure"] {
                try await client.execute(uri: uri, method: .get, headers: [.authorization: "Bearer \(token)"]) { response in
                    #expect(response.status == .serviceUnavailable, "\(uri)")
                }
            }
            let request = Task { try await client.execute(uri: "/v1/slow", method: .get) { $0.status } }
            try await Task.sleep(for: .milliseconds(200))
            request.cancel()
            #expect(try await request.value == .serviceUnavailable)
        }
        let failed = log.records.filter { $0.message.hasPrefix("request failed") }
        #expect(failed.count == 2 && failed.allSatisfy { $0.level == .warning && $0.metadata["tenant"] == "acme-log" }, "\(log.records)")
        let cancelled = log.records.filter { $0.message == "request cancelled" }
        #expect(cancelled.count == 1 && cancelled.first?.level == .debug && cancelled.first?.metadata["tenant"] == nil, "\(log.records)")
    }

    @Test("a request cancelled while it waits for a Postgres connection answers 503, not 500 (postgres-nio's cancelled wait)")
    func cancelledPostgresWait() async throws {
        let postgres = PostgresClient(configuration: try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 1))
        let running = Task { await postgres.run() }
        defer { running.cancel() }
        let thrown = Mutex<(any Error)?>(nil)
        // Each request says when it is about to ask the pool for a connection.
        let (asked, asking) = AsyncStream.makeStream(of: Void.self)
        let router = Router.service()
        router.get("v1/query") { _, context -> String in
            do {
                asking.yield()
                try await postgres.query("SELECT 1", logger: context.logger)
            } catch {
                thrown.withLock { $0 = error }
                throw error
            }
            return "ok"
        }
        // The pool's one connection, held until released (at the end, whatever happens).
        let (held, holding) = AsyncStream.makeStream(of: Void.self)
        let (release, releasing) = AsyncStream.makeStream(of: Void.self)
        defer { releasing.finish() }
        let holder = Task {
            defer { holding.finish() }
            try await postgres.withConnection { _ in
                holding.yield()
                for await _ in release {}
            }
        }
        for await _ in held { break }
        try await Application(router: router).test(.router) { client in
            var waits = asked.makeAsyncIterator()
            // Cancelled while it waits for the connection. A request cancelled before it reached
            // the pool (a starved machine) gets Swift's CancellationError instead, and the same
            // answer; it is tried again, a few times, so that the pool's own error is met.
            for _ in 0..<5 {
                let request = Task {
                    try await client.execute(uri: "/v1/query", method: .get) { response in
                        (response.status, try Self.envelope(response))
                    }
                }
                _ = await waits.next()
                try await Task.sleep(for: .milliseconds(100))
                request.cancel()
                let (status, body) = try await withDeadline(.seconds(30), orThrow: HarnessError(message: "the cancelled request was not answered")) {
                    try await request.value
                }
                #expect(status == .serviceUnavailable && body.retryAfterSeconds == 1, "\(body)")
                if !(thrown.withLock { $0 } is CancellationError) { break }
            }
        }
        releasing.finish()
        try await holder.value
        let error = try #require(thrown.withLock { $0 })
        #expect(!(error is CancellationError), "postgres-nio's own error, not Swift's: \(String(reflecting: error))")
        #expect(ErrorEnvelopeMiddleware.isCancellation(error), "\(String(reflecting: error))")
        // The pool shut down under a request (the service stopping): 503, not 500.
        running.cancel()
        try await Application(router: router).test(.router) { client in
            let answered = await eventually {
                let status = try? await client.execute(uri: "/v1/query", method: .get) { $0.status }
                return status == .serviceUnavailable && thrown.withLock { ($0 as? ConnectionPoolError) == .poolShutdown }
            }
            #expect(answered, "\(String(reflecting: thrown.withLock { $0 }))")
        }
    }

    @Test("/healthz, /readyz against real NATS and Postgres, and /metrics")
    func operationalRoutes() async throws {
        let connection = try await TestEnvironment.connect()
        let postgres = PostgresClient(configuration: try PostgresClient.Configuration(url: try TestEnvironment.databaseURL, maxConnections: 2))
        let running = Task { await postgres.run() }
        defer { running.cancel() }
        try await Self.application(readiness: [.nats(connection), .postgres(postgres)]).test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
            // The pool was just started: its first connection may take a moment on a busy machine.
            #expect(try await eventually { try await client.execute(uri: "/readyz", method: .get) { $0.status == .ok } })
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
                let text = String(buffer: response.body)
                #expect(text.contains("hb_requests"))
                // The live heap and resident set, read at the scrape: a test process holds megabytes.
                for name in ["process_heap_bytes", "process_resident_memory_bytes"] {
                    let line: Substring? = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
                    let value: Double = line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) } ?? 0
                    #expect(value > 1_000_000, "\(name): \(line ?? "absent")")
                }
            }
        }
        await connection.drain()
    }

    @Test("/readyz answers 503 naming the dependency that is down")
    func notReady() async throws {
        let server = try NATSServerProcess()
        try await server.start()
        let connection = try await NATSConnection.connect(NATSConfiguration(servers: [server.url], name: "ready-test"))
        let unreachable = PostgresClient(
            configuration: try PostgresClient.Configuration(url: "postgres://u:p@127.0.0.1:\(try freeLoopbackPort())/db")
        )
        let running = Task { await unreachable.run() }
        defer { running.cancel() }
        await server.kill()
        #expect(await eventually { connection.status != .connected })
        try await Self.application(readiness: [.nats(connection), .postgres(unreachable, timeout: .milliseconds(500))]).test(.router) { client in
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let body = try Self.envelope(response)
                #expect(body.code == .serviceUnavailable)
                #expect(body.message.contains("nats") && body.message.contains("postgres"))
                #expect(response.headers[.retryAfter] == "1")
            }
            try await client.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
        }
        await connection.close()
    }
}

func base64URL(_ data: Data) -> String {
    data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
        of: "=",
        with: ""
    )
}

/// Answers a failure itself, logged through the envelope's log, as ingest's OTLP receiver does.
struct OwnFailureMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext

    func handle(
        _ request: Request,
        context: ServiceRequestContext,
        next: (Request, ServiceRequestContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return ErrorEnvelopeMiddleware.answer(error, context: context)
        }
    }
}

/// What a test's services logged, at every level.
final class CapturedLog: Sendable {
    struct Record: Sendable, CustomStringConvertible {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
        var description: String { "\(self.level) \(self.message) \(self.metadata)" }
    }

    private let stored = Mutex<[Record]>([])

    var records: [Record] { self.stored.withLock { $0 } }

    var logger: Logger {
        Logger(label: "captured") { _ in Handler(log: self) }
    }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { self.metadata[key] }
            set { self.metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = self.metadata.merging(event.metadata ?? [:]) { _, new in new }
            let record = Record(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" })
            self.log.stored.withLock { $0.append(record) }
        }
    }
}
