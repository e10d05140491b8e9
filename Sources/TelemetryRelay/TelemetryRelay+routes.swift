import Hummingbird
import NIOCore
import OTLP
import SwiftProtobuf

extension TelemetryRelay {
    /// The three OTLP routes; anything else is Hummingbird's 404.
    func router() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        for signal in RelaySignal.allCases {
            router.post(RouterPath(signal.path)) { request, _ in
                await self.receive(signal, request)
            }
        }
        return router
    }

    /// Takes one export: the checks in the order of their cost, then stamped and queued.
    func receive(_ signal: RelaySignal, _ request: Request) async -> Response {
        let json: Bool
        switch request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() {
        case "application/x-protobuf": json = false
        case "application/json": json = true
        default:
            self.countBadRequest()
            return Self.failure(415, "send application/x-protobuf or application/json", json: true)
        }
        guard self.isAuthorized(request) else {
            self.countBadRequest()
            return Self.failure(401, "this relay takes only its own run's secret (\(Self.secretHeader))", json: json)
        }
        guard self.beginRequest() else {
            self.countBusy()
            return Self.failure(503, "\(Self.maxConcurrentRequests) exports are being read; retry shortly", json: json, retryAfter: 1)
        }
        defer { self.endRequest() }
        let bytes: [UInt8]
        do {
            let body = try await request.body.collect(upTo: self.limits.maxBodyBytes)
            bytes = Array(buffer: try OTLPBody.decode(body, contentEncoding: request.headers[.contentEncoding], limit: self.limits.maxBodyBytes))
        } catch let failure as OTLPBody.Failure {
            self.countBadRequest()
            switch failure {
            case .tooLarge: return Self.failure(413, "the body inflates past \(self.limits.maxBodyBytes) bytes", json: json)
            case .malformed(let reason): return Self.failure(400, reason, json: json)
            case .unsupportedEncoding(let reason): return Self.failure(415, reason, json: json)
            }
        } catch is NIOTooManyBytesError {
            self.countBadRequest()
            return Self.failure(413, "the body is over \(self.limits.maxBodyBytes) bytes", json: json)
        } catch {
            self.countBadRequest()
            return Self.failure(400, "the body could not be read (\(error))", json: json)
        }
        // Protobuf is counted before it is decoded (millions of empty records are a few
        // megabytes on the wire, gigabytes decoded); JSON, rarer and smaller, is decoded first.
        if json && bytes.count > self.limits.maxJSONBodyBytes {
            self.countBadRequest()
            return Self.failure(413, "a JSON export may be \(self.limits.maxJSONBodyBytes) bytes; send protobuf", json: json)
        }
        let stamped: [UInt8]
        let count: OTLPItemCount.Count
        do {
            let (limit, values) = (self.limits.maxItemsPerExport, self.limits.maxValuesPerExport)
            if json {
                // Forwarded as JSON, counted in its protobuf form (the same message).
                let both = try self.stamp.stampJSON(signal, body: bytes)
                stamped = both.json
                count = try signal.itemCount.count(protobuf: both.protobuf, limit: limit, maxValues: values)
            } else {
                count = try signal.itemCount.count(protobuf: bytes, limit: limit, maxValues: values)
                stamped = try self.stamp.stamp(signal, body: bytes, json: false)
            }
        } catch let error as OTLPItemCount.TooMany {
            self.countBadRequest()
            return Self.failure(
                413,
                "\(error.reason) in one export; at most \(self.limits.maxItemsPerExport) items and \(self.limits.maxValuesPerExport) values",
                json: json
            )
        } catch {
            self.countBadRequest()
            return Self.failure(400, "the body is not an OTLP \(signal.rawValue) export (\(error))", json: json)
        }
        let items = count.items
        if let wait = self.admit(items: items) {
            let seconds = Int((wait.secondsDouble).rounded(.up))
            return Self.failure(429, "over \(Int(self.limits.itemsPerSecond)) items a second", json: json, retryAfter: max(1, min(seconds, 60)))
        }
        guard self.enqueue(RelayQueue.Entry(signal: signal, bytes: stamped, items: items, values: count.values, json: json)) else {
            return Self.failure(503, "the relay's queue for ingest is full; retry shortly", json: json, retryAfter: 2)
        }
        // An empty Export*ServiceResponse: no bytes in protobuf, `{}` in JSON.
        return Response(
            status: .ok,
            headers: [.contentType: json ? "application/json" : "application/x-protobuf"],
            body: .init(byteBuffer: ByteBuffer(string: json ? "{}" : ""))
        )
    }

    /// An OTLP/HTTP failure: the status and a `google.rpc.Status` in the request's encoding.
    static func failure(_ status: Int, _ message: String, json: Bool, retryAfter: Int? = nil) -> Response {
        var rpc = OTLPStatus()
        rpc.code =
            switch status {
            case 401: 16
            case 429: 8
            case 503: 14
            default: 3
            }
        rpc.message = message
        let bytes: [UInt8] = (try? json ? rpc.jsonUTF8Bytes() : rpc.serializedBytes()) ?? []
        var headers: HTTPFields = [.contentType: json ? "application/json" : "application/x-protobuf"]
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The items an ingest answer's `partial_success` says it refused (0 if it says none).
    static func rejectedItems(_ signal: RelaySignal, in body: ByteBuffer, json: Bool) -> Int {
        let bytes = Array(buffer: body)
        guard !bytes.isEmpty else { return 0 }
        func decode<Answer: SwiftProtobuf.Message>(_: Answer.Type) -> Answer? {
            json ? try? Answer(jsonUTF8Bytes: bytes) : try? Answer(serializedBytes: bytes)
        }
        let rejected: Int64? =
            switch signal {
            case .traces: decode(OTLPExportTraceResponse.self)?.partialSuccess.rejectedSpans
            case .logs: decode(OTLPExportLogsResponse.self)?.partialSuccess.rejectedLogRecords
            case .metrics: decode(OTLPExportMetricsResponse.self)?.partialSuccess.rejectedDataPoints
            }
        return Int(clamping: max(0, rejected ?? 0))
    }
}
