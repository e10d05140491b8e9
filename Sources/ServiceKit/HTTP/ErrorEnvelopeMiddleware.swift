public import Contracts
import Foundation
public import Hummingbird
public import Logging
import PostgresNIO
import _ConnectionPoolModule

/// Turns every error into the shared JSON error envelope: ``APIError`` with its code and
/// message, ``ServiceKitError`` as `ServiceUnavailable` or `ServerError` without its detail,
/// Postgres out of reach (``PSQLError/isUnavailability``) as `ServiceUnavailable`,
/// Hummingbird's own errors (unknown route, body too large, undecodable body) by their status,
/// a request cancelled (the service stopping under it) as a quiet `ServiceUnavailable`,
/// anything else as a logged `ServerError` whose details stay in the log. The log of a failed
/// request names its tenant once an authenticator inside has known it.
public struct ErrorEnvelopeMiddleware: RouterMiddleware {
    public typealias Context = ServiceRequestContext

    public init() {}

    public func handle(
        _ request: Request,
        context: ServiceRequestContext,
        next: (Request, ServiceRequestContext) async throws -> Response
    ) async throws -> Response {
        await RequestTenant.$current.withValue(RequestTenant()) {
            do {
                return try await next(request, context)
            } catch {
                return Self.answer(error, context: context)
            }
        }
    }

    /// A failed request's answer in the envelope, logged: what this middleware does with an
    /// error, for a middleware inside it that answers failures itself.
    public static func answer(_ error: any Error, context: ServiceRequestContext) -> Response {
        let (status, body) = Self.envelope(for: error, requestID: context.requestID)
        Self.log(error, as: body, logger: context.logger)
        return Self.response(status: status, body: body)
    }

    /// Logs a failed request: internal failures at `error` with their detail, unavailable
    /// dependencies at `warning`, refusals (the client's fault) and requests cancelled
    /// (``isCancellation(_:)``) at `debug`; with the request's `tenant` once an authenticator
    /// has recorded it (called inside the envelope).
    public static func log(_ error: any Error, as body: ErrorEnvelope.Body, logger: Logger) {
        var logger = logger
        if let tenant = RequestTenant.current?.value { logger[metadataKey: "tenant"] = .string(tenant) }
        if body.code == .serviceUnavailable, Task.isCancelled, Self.isCancellation(error) {
            logger.debug("request cancelled", metadata: ["error": "\(String(reflecting: error))"])
        } else if body.code == .serverError {
            logger.error("request failed", metadata: ["error": "\(String(reflecting: error))"])
        } else if body.code == .serviceUnavailable {
            logger.warning("request failed: dependency unavailable", metadata: ["error": "\(String(reflecting: error))"])
        } else {
            logger.debug("request refused", metadata: ["code": "\(body.code.rawValue)", "reason": "\(body.message)"])
        }
    }

    /// The status and envelope body for an error, read in the task that served the request.
    public static func envelope(for error: any Error, requestID: String?) -> (HTTPResponse.Status, ErrorEnvelope.Body) {
        if Task.isCancelled, Self.isCancellation(error) {
            // The request's task was cancelled (the service stopping under it): not a fault of
            // the service's, and the request may be tried again, on this replica or another.
            return Self.unavailable(requestID: requestID)
        }
        switch error {
        case let error as APIError:
            return (
                error.status,
                ErrorEnvelope.Body(
                    code: error.code,
                    message: error.message,
                    requestId: requestID,
                    retryAfterSeconds: error.retryAfterSeconds,
                    details: error.details
                )
            )
        case let error as ServiceKitError:
            // Internal failures (NATS, JetStream, migrations) keep their detail in the log.
            let code = error.code.errorCode
            if code == .serviceUnavailable { return Self.unavailable(requestID: requestID) }
            return (
                HTTPResponse.Status(code: code.httpStatus),
                ErrorEnvelope.Body(code: code, message: "internal error", requestId: requestID)
            )
        case let error as PSQLError where error.isUnavailability:
            return Self.unavailable(requestID: requestID)
        case let error as PostgresTransactionError where error.isUnavailability:
            return Self.unavailable(requestID: requestID)
        case let error as ConnectionPoolError where error == .poolShutdown:
            // The service is stopping: its pool is closed under the request.
            return Self.unavailable(requestID: requestID)
        case let error as HTTPError:
            let code = Self.code(for: error.status)
            return (error.status, ErrorEnvelope.Body(code: code, message: error.body ?? error.status.reasonPhrase, requestId: requestID))
        case let error as any HTTPResponseError:
            return (error.status, ErrorEnvelope.Body(code: Self.code(for: error.status), message: error.status.reasonPhrase, requestId: requestID))
        default:
            return (.internalServerError, ErrorEnvelope.Body(code: .serverError, message: "internal error", requestId: requestID))
        }
    }

    /// Whether `error` is what a cancelled task throws: `CancellationError`, or postgres-nio's
    /// answer to a cancelled wait for a connection (the pool's `requestCancelled`, as it is or as
    /// a query cancelled), also inside a transaction. Counts as the request's cancellation only
    /// where its task is cancelled: the same error from a task of its own that was cancelled is
    /// still a fault.
    public static func isCancellation(_ error: any Error) -> Bool {
        switch error {
        case is CancellationError:
            return true
        case let error as ConnectionPoolError:
            return error == .requestCancelled
        case let error as PSQLError:
            return error.code == .queryCancelled
        case let error as PostgresTransactionError:
            return [error.beginError, error.closureError, error.commitError].contains { $0.map(Self.isCancellation) == true }
        default:
            return false
        }
    }

    /// A dependency out of reach (NATS, Postgres in a failover or a restart): 503, retry in a
    /// second, the detail in the log.
    static func unavailable(requestID: String?) -> (HTTPResponse.Status, ErrorEnvelope.Body) {
        (
            .serviceUnavailable,
            ErrorEnvelope.Body(
                code: .serviceUnavailable,
                message: "a dependency is unavailable; retry later",
                requestId: requestID,
                retryAfterSeconds: 1
            )
        )
    }

    static func code(for status: HTTPResponse.Status) -> ErrorCode {
        switch status.code {
        case 401: .authInvalid
        case 403: .permissionDenied
        case 404: .notFound
        case 409: .conflict
        case 413: .payloadTooLarge
        case 415: .unsupportedMediaType
        case 429: .rateLimited
        case 503: .serviceUnavailable
        case 400..<500: .invalidRequest
        default: .serverError
        }
    }

    /// A JSON response carrying the envelope (and `Retry-After` when the body has one).
    public static func response(status: HTTPResponse.Status, body: ErrorEnvelope.Body) -> Response {
        let (headers, payload) = Self.parts(of: body)
        return Response(status: status, headers: headers, body: .init(byteBuffer: payload))
    }

    /// The envelope's headers (`Content-Type`, `Retry-After` when the body has one,
    /// `WWW-Authenticate` for an auth error) and its JSON.
    static func parts(of body: ErrorEnvelope.Body) -> (HTTPFields, ByteBuffer) {
        let data = (try? JSONEncoder().encode(ErrorEnvelope(body))) ?? Data(#"{"error":{"code":"ServerError"}}"#.utf8)
        var headers: HTTPFields = [.contentType: "application/json"]
        if let retryAfter = body.retryAfterSeconds {
            headers[.retryAfter] = String(retryAfter)
        }
        if body.errorClass == .auth {
            headers[.wwwAuthenticate] = #"Bearer error="invalid_token""#
        }
        return (headers, ByteBuffer(bytes: data))
    }
}
