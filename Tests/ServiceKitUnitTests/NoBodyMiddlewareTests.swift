import Contracts
import HTTPTypes
import OpenAPIRuntime
import ServiceKit
import Synchronization
import Testing

@Suite("NoBodyMiddleware: a request that sends no body reaches its operation without one")
struct NoBodyMiddlewareTests {
    /// What the operation was handed: nil for no body, else its bytes.
    static func handed(_ request: HTTPRequest, _ body: HTTPBody?) async throws -> [UInt8]? {
        let seen = Mutex<HTTPBody?>(nil)
        _ = try await NoBodyMiddleware().intercept(
            request,
            body: body,
            metadata: ServerRequestMetadata(),
            operationID: "op"
        ) { _, body, _ in
            seen.withLock { $0 = body }
            return (HTTPResponse(status: .ok), nil)
        }
        guard let body = seen.withLock({ $0 }) else { return nil }
        return try await [UInt8](collecting: body, upTo: 2 << 20)
    }

    static func request(_ fields: HTTPFields = [:]) -> HTTPRequest {
        HTTPRequest(method: .post, scheme: "http", authority: "x", path: "/stop", headerFields: fields)
    }

    /// A body whose length the transport does not know (chunked, HTTP/2).
    static func streamed(_ bytes: [UInt8]) -> HTTPBody {
        HTTPBody(
            AsyncStream { continuation in
                if !bytes.isEmpty { continuation.yield(ArraySlice(bytes)) }
                continuation.finish()
            },
            length: .unknown
        )
    }

    @Test("no Content-Type and nothing sent: no body, whether the length is known or not")
    func none() async throws {
        #expect(try await Self.handed(Self.request([.contentLength: "0"]), HTTPBody([], length: .known(0))) == nil)
        #expect(try await Self.handed(Self.request(), Self.streamed([])) == nil)
    }

    @Test("a body is handed on as sent: typed, of a known length, or read when its length is unknown")
    func some() async throws {
        let json = Array(#"{"reason":"x"}"#.utf8)
        #expect(try await Self.handed(Self.request([.contentType: "application/json"]), HTTPBody([])) == [])
        #expect(try await Self.handed(Self.request(), HTTPBody(json, length: .known(Int64(json.count)))) == json)
        #expect(try await Self.handed(Self.request(), Self.streamed(json)) == json)
    }

    @Test("an untyped body of unknown length past 1 MiB: 413")
    func bounded() async throws {
        let fits = [UInt8](repeating: 0x20, count: NoBodyMiddleware.maxUntypedBytes)
        #expect(try await Self.handed(Self.request(), Self.streamed(fits))?.count == fits.count)
        await #expect(throws: APIError.self) {
            try await Self.handed(Self.request(), Self.streamed(fits + [0x20]))
        }
    }
}
