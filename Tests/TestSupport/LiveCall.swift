import Foundation
public import HTTPTypes
public import HummingbirdTesting
import NIOCore

/// JSON calls to a service under test, for the live tests of every service.
public enum LiveCall {
    /// One JSON call: the status and the body as an object (empty if none or not an object).
    @discardableResult
    public static func call(
        _ client: any TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        token: String? = nil,
        json: Any? = nil,
        body: String? = nil,
        headers extra: HTTPFields = [:]
    ) async throws -> (HTTPResponse.Status, [String: Any]) {
        var headers = extra
        if let token { headers[.authorization] = "Bearer \(token)" }
        var buffer: ByteBuffer?
        if let json {
            buffer = ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json))
            headers[.contentType] = headers[.contentType] ?? "application/json"
        } else if let body {
            buffer = ByteBuffer(string: body)
            headers[.contentType] = headers[.contentType] ?? "application/json"
        }
        return try await client.execute(uri: uri, method: method, headers: headers, body: buffer) { response in
            let object = (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:]
            return (response.status, object)
        }
    }

    /// `call` again while it answers 503 (a dependency too busy or out of reach for now: on a
    /// loaded machine, a commit or a lock wait past its 5 s), a second apart as its Retry-After
    /// asks, for at most `within` in all; the last answer. What a client does with a 503, for the
    /// tests whose subject is not the 503.
    public static func retryingUnavailable<Answer>(
        within: Duration = .seconds(60),
        _ call: () async throws -> (HTTPResponse.Status, Answer)
    ) async throws -> (HTTPResponse.Status, Answer) {
        try await Self.retrying(while: .serviceUnavailable, within: within, every: .seconds(1), call)
    }

    /// `call` again while it answers `status`, `every` apart, for at most `within` in all; the
    /// last answer.
    public static func retrying<Answer>(
        while status: HTTPResponse.Status,
        within: Duration,
        every interval: Duration,
        _ call: () async throws -> (HTTPResponse.Status, Answer)
    ) async throws -> (HTTPResponse.Status, Answer) {
        let deadline = ContinuousClock.now + within
        var answer = try await call()
        while answer.0 == status, ContinuousClock.now < deadline {
            try await Task.sleep(for: interval)
            answer = try await call()
        }
        return answer
    }

    /// The raw body of a call, for byte-for-byte comparisons.
    public static func raw(
        _ client: any TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        token: String,
        body: String
    ) async throws -> (HTTPResponse.Status, String) {
        try await client.execute(
            uri: uri,
            method: method,
            headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
            body: ByteBuffer(string: body)
        ) { response in
            (response.status, String(buffer: response.body))
        }
    }
}

extension Dictionary where Key == String, Value == Any {
    /// The error envelope's code, if this is one.
    public var errorCode: String? { (self["error"] as? [String: Any])?["code"] as? String }
}
