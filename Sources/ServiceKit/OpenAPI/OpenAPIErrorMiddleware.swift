import Contracts
public import Hummingbird
import OpenAPIRuntime

/// Turns what the OpenAPI runtime throws into errors ``ErrorEnvelopeMiddleware`` renders: a
/// handler's own error comes out of the runtime's `ServerError` as it was thrown, and a request
/// the runtime could not decode (wrong types, a missing field, an unknown enum value, a bad
/// content type) becomes a 4xx `InvalidRequest` naming what was wrong.
public struct OpenAPIErrorMiddleware: RouterMiddleware {
    public typealias Context = ServiceRequestContext

    public init() {}

    public func handle(
        _ request: Request,
        context: ServiceRequestContext,
        next: (Request, ServiceRequestContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as ServerError {
            throw Self.unwrap(error)
        }
    }

    static func unwrap(_ error: ServerError) -> any Error {
        if error.underlyingError is APIError || error.underlyingError is ServiceKitError { return error.underlyingError }
        let status = error.httpStatus
        guard (400..<500).contains(status.code) else { return error.underlyingError }
        let code: ErrorCode =
            switch status.code {
            case 415: .unsupportedMediaType
            case 404: .notFound
            default: .invalidRequest
            }
        let detail: String =
            if error.underlyingError is DecodingError {
                describeDecodingFailure(error.underlyingError)
            } else {
                "\(error.underlyingError)"
            }
        return APIError(code, detail)
    }
}
