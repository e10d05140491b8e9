import Contracts
import Foundation
public import HTTPTypes
public import Hummingbird

/// Gives every request a correlation id, puts it in the logger's metadata and echoes it as
/// `x-request-id` on every response. A client id is kept when it is 1–128 characters of
/// `[A-Za-z0-9._:-]`; otherwise a new UUID is used (ids end up in logs and JSON). A valid W3C
/// `traceparent` (``TraceParent``) is kept for the bus, its trace id logged as `trace_id`.
public struct RequestIDMiddleware: RouterMiddleware {
    public typealias Context = ServiceRequestContext

    public init() {}

    public func handle(
        _ request: Request,
        context: ServiceRequestContext,
        next: (Request, ServiceRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        let id = Self.id(sent: request.headers[.requestID])
        context.requestID = id
        context.logger[metadataKey: "request_id"] = .string(id)
        if let trace = TraceParent(request.headers[.traceParent]) {
            context.traceParent = trace
            context.logger[metadataKey: "trace_id"] = .string(String(trace.traceID))
        }
        var response = try await next(request, context)
        response.headers[.requestID] = id
        return response
    }

    /// The request's correlation id: `sent` (the client's `x-request-id`) if it is valid, else a
    /// new one.
    static func id(sent: String?) -> String {
        sent.flatMap { Self.isValid($0) ? $0 : nil } ?? UUID().uuidString.lowercased()
    }

    static func isValid(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"):
                    true
                default:
                    false
                }
            }
    }
}

extension HTTPField.Name {
    /// `x-request-id`.
    public static let requestID = HTTPField.Name(HeaderName.requestID)!
    /// `traceparent` (W3C Trace Context).
    public static let traceParent = HTTPField.Name(TraceParent.headerName)!
    /// `x-forwarded-for`, which the edge appends the client's address to.
    public static let xForwardedFor = HTTPField.Name("x-forwarded-for")!
}
