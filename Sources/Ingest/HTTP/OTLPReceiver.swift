import Contracts
import EventLog
import Foundation
import Hummingbird
import OTLP
import ServiceKit
import SwiftProtobuf

/// The OTLP/HTTP receivers: `POST /v1/traces`, `/v1/logs` and `/v1/metrics`, authenticated by
/// an ingest key (`Authorization: Bearer sdi_…`, e.g. through `OTEL_EXPORTER_OTLP_HEADERS`).
///
/// Bodies are `application/x-protobuf` or `application/json` (OTLP JSON: hex ids, integer
/// enums, unknown fields ignored), optionally `Content-Encoding: gzip`, with or without a
/// Content-Length. Answers use the request's content type: 200 with the export response (its
/// `partial_success` counting rejected items), or an error status with a `google.rpc.Status`
/// body: 400 bad data, 401 bad key, 413 over `ingest.max-body-bytes` (compressed or not) or
/// over `ingest.max-batch-events` items, 415 another type or encoding, 429/503 with
/// `Retry-After`.
struct OTLPReceiver: Sendable {
    let keys: IngestKeyStore
    let writer: EventLogWriter
    let settings: IngestSettings
    /// Each tenant's rate of bulk events (large exports of a tenant over it are refused unread).
    let rate: TenantEventRate
    /// The share of the parse budget a request holds.
    let memory: RequestMemoryMiddleware

    enum Encoding: Sendable {
        case protobuf
        case json

        var contentType: String { self == .json ? "application/json" : "application/x-protobuf" }

        /// The encoding a request's `Content-Type` names, if it is one of the two.
        init?(_ request: Request) {
            switch request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() {
            case "application/x-protobuf": self = .protobuf
            case "application/json": self = .json
            default: return nil
            }
        }
    }

    private static let jsonDecoding: JSONDecodingOptions = {
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true
        return options
    }()

    func addRoutes(to router: Router<ServiceRequestContext>) {
        // Failures (authentication's too) are answered the OTLP way, in the request's encoding.
        let otlp = router.group("v1").add(middleware: OTLPFailureMiddleware()).add(middleware: AgentAuthenticationMiddleware(keys: self.keys))
            .add(middleware: self.rate.middleware).add(middleware: self.memory)
        otlp.post("traces") { request, context in
            try await self.receive(request, context: context, as: OTLPExportTraceRequest.self, items: .traces, map: { $0.add($1) }) {
                rejected,
                message in
                var response = OTLPExportTraceResponse()
                if !message.isEmpty {
                    response.partialSuccess.rejectedSpans = rejected
                    response.partialSuccess.errorMessage = message
                }
                return response
            }
        }
        otlp.post("logs") { request, context in
            try await self.receive(request, context: context, as: OTLPExportLogsRequest.self, items: .logs, map: { $0.add($1) }) {
                rejected,
                message in
                var response = OTLPExportLogsResponse()
                if !message.isEmpty {
                    response.partialSuccess.rejectedLogRecords = rejected
                    response.partialSuccess.errorMessage = message
                }
                return response
            }
        }
        otlp.post("metrics") { request, context in
            try await self.receive(request, context: context, as: OTLPExportMetricsRequest.self, items: .metrics, map: { $0.add($1) }) {
                rejected,
                message in
                var response = OTLPExportMetricsResponse()
                if !message.isEmpty {
                    response.partialSuccess.rejectedDataPoints = rejected
                    response.partialSuccess.errorMessage = message
                }
                return response
            }
        }
    }

    /// Reads, decodes, maps and commits one export (``OTLPFailureMiddleware`` turns a failure
    /// into a `google.rpc.Status`).
    private func receive<Export: SwiftProtobuf.Message, Answer: SwiftProtobuf.Message>(
        _ request: Request,
        context: ServiceRequestContext,
        as type: Export.Type,
        items: OTLPItemCount,
        map: (inout OTLPBatch, Export) -> Void,
        answer: (Int64, String) -> Answer
    ) async throws -> Response {
        let encoding = try Self.encoding(of: request)
        let tenant = try context.requireAgentTenant()
        let body = Array(buffer: try await self.body(of: request))
        // Counted before decoding: decoded, an export of millions of empty items (or of one item
        // with millions of attributes) would cost gigabytes. What decoding will build is taken
        // from the parse budget first.
        let count: OTLPItemCount.Count
        do {
            count =
                encoding == .json
                ? try items.count(json: body, limit: self.settings.maxBatchEvents, maxValues: self.settings.maxOTLPValues)
                : try items.count(protobuf: body, limit: self.settings.maxBatchEvents, maxValues: self.settings.maxOTLPValues)
        } catch let error as OTLPItemCount.TooMany {
            throw APIError(
                .payloadTooLarge,
                "\(error.reason) in one export; at most \(self.settings.maxBatchEvents) items and \(self.settings.maxOTLPValues) values"
            )
        } catch {
            throw APIError(.invalidRequest, "the body is not an OTLP \(Export.protoMessageName) in \(encoding.contentType) (\(error))")
        }
        let decoded = count.values * IngestSettings.decodedBytesPerOTLPValue
        guard self.memory.budget.reserve(decoded) else {
            throw APIError(.rateLimited, "ingest is decoding as much as it may at once; retry shortly", retryAfterSeconds: 1)
        }
        defer { self.memory.budget.release(decoded) }
        let export: Export
        do {
            export =
                switch encoding {
                case .protobuf: try Export(serializedBytes: body)
                case .json: try Export(jsonUTF8Bytes: body, options: Self.jsonDecoding)
                }
        } catch {
            throw APIError(
                .invalidRequest,
                "the body is not an OTLP \(Export.protoMessageName) in \(encoding.contentType) (\(error))"
            )
        }
        var batch = OTLPBatch(
            now: Int64(Date().timeIntervalSince1970 * 1000),
            maxEventBytes: self.settings.maxEventBytes,
            json: encoding == .json
        )
        map(&batch, export)
        // Items (spans, records, points) are what the client counts; the events they map to
        // (up to three a span) must still fit a tenant's share of the queue, or the export
        // could never pass.
        guard batch.items <= self.settings.maxBatchEvents,
            batch.events.count <= Int(Double(self.settings.maxQueuedEvents) * self.settings.maxQueuedTenantShare)
        else {
            throw APIError(
                .payloadTooLarge,
                "\(batch.items) items (\(batch.events.count) events); at most \(self.settings.maxBatchEvents) items per export"
            )
        }
        batch.apply(try await self.writer.submit(tenant: tenant, events: batch.events, requestID: context.requestID))
        return try Self.response(.ok, answer(Int64(batch.rejectedItems.count), batch.errorMessage), encoding: encoding)
    }

    private static func encoding(of request: Request) throws(APIError) -> Encoding {
        guard let encoding = Encoding(request) else {
            throw APIError(
                .unsupportedMediaType,
                "send application/x-protobuf or application/json, not \(request.headers[.contentType] ?? "no Content-Type")"
            )
        }
        return encoding
    }

    /// The body, whole (chunked or not) and gunzipped, within `ingest.max-body-bytes` both
    /// before and after decompression.
    private func body(of request: Request) async throws -> ByteBuffer {
        let limit = self.settings.maxBodyBytes
        let body = try await request.body.collect(upTo: limit)
        do throws(OTLPBody.Failure) {
            return try OTLPBody.decode(body, contentEncoding: request.headers[.contentEncoding], limit: limit)
        } catch .tooLarge {
            throw APIError(.payloadTooLarge, "the body inflates past \(limit) bytes")
        } catch .malformed(let reason) {
            throw APIError(.invalidRequest, reason)
        } catch .unsupportedEncoding(let reason) {
            throw APIError(.unsupportedMediaType, reason)
        }
    }

    static func response(_ status: HTTPResponse.Status, _ message: some SwiftProtobuf.Message, encoding: Encoding) throws -> Response {
        let bytes: [UInt8] =
            switch encoding {
            case .protobuf: try message.serializedBytes()
            case .json: try message.jsonUTF8Bytes()
            }
        return Response(status: status, headers: [.contentType: encoding.contentType], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// An error as OTLP/HTTP wants it: the status code, a `google.rpc.Status` body in the
    /// request's encoding, `Retry-After` when retrying later can help.
    static func failure(_ error: any Error, encoding: Encoding, context: ServiceRequestContext) -> Response {
        let (status, envelope) = ErrorEnvelopeMiddleware.envelope(for: error, requestID: context.requestID)
        ErrorEnvelopeMiddleware.log(error, as: envelope, logger: context.logger)
        var rpc = OTLPStatus()
        rpc.code = Self.grpcCode(status)
        rpc.message = "\(envelope.code.rawValue): \(envelope.message)"
        var response = (try? Self.response(status, rpc, encoding: encoding)) ?? Response(status: status)
        if let retryAfter = envelope.retryAfterSeconds {
            response.headers[.retryAfter] = String(retryAfter)
        }
        if envelope.errorClass == .auth {
            response.headers[.wwwAuthenticate] = #"Bearer error="invalid_token""#
        }
        return response
    }

    /// The gRPC status code matching an HTTP status, as OTLP/HTTP's `Status.code` carries.
    static func grpcCode(_ status: HTTPResponse.Status) -> Int32 {
        switch status.code {
        case 400, 413, 415: 3  // INVALID_ARGUMENT
        case 401: 16  // UNAUTHENTICATED
        case 403: 7  // PERMISSION_DENIED
        case 404: 5  // NOT_FOUND
        case 429: 8  // RESOURCE_EXHAUSTED
        case 503: 14  // UNAVAILABLE
        default: 13  // INTERNAL
        }
    }
}

/// Answers a failed OTLP request as OTLP/HTTP wants: the status, a `google.rpc.Status` body in
/// the request's encoding (JSON when it named neither), `Retry-After` when retrying can help.
struct OTLPFailureMiddleware: RouterMiddleware {
    typealias Context = ServiceRequestContext

    func handle(
        _ request: Request,
        context: ServiceRequestContext,
        next: (Request, ServiceRequestContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return OTLPReceiver.failure(error, encoding: OTLPReceiver.Encoding(request) ?? .json, context: context)
        }
    }
}
