public import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import OTLP
import ServiceKit
import SwiftProtobuf

/// What a load run sends.
public enum IngestProtocol: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// Native JSON batches to `/v1/ingest/events` (log events).
    case native
    /// OTLP/HTTP protobuf log records to `/v1/logs`.
    case otlpLogs = "otlp-logs"
    /// The same log records as OTLP/HTTP JSON (`application/json`, enums as numbers as OTLP's
    /// JSON encoding says).
    case otlpLogsJSON = "otlp-logs-json"
    /// OTLP/HTTP protobuf spans to `/v1/traces` (GenAI chat spans: a trace and a usage event each).
    case otlpTraces = "otlp-traces"
}

extension IngestProtocol {
    /// The requests' `Content-Type`.
    var contentType: String {
        switch self {
        case .native, .otlpLogsJSON: "application/json"
        case .otlpLogs, .otlpTraces: "application/x-protobuf"
        }
    }
}

/// Drives ingest: `connections` workers, each posting batches of `batch` items back to back,
/// paced to `rate` items/s in total (0 = as fast as they go).
public struct IngestLoad: Sendable {
    public var url: String
    public var protocolName: IngestProtocol
    /// The ingest keys the connections post with, dealt round the connections (one tenant each).
    public var keys: [String]
    public var connections: Int
    public var batch: Int
    public var rate: Double
    public var duration: Duration

    public init(
        url: String,
        protocolName: IngestProtocol = .native,
        key: String,
        connections: Int,
        batch: Int,
        rate: Double,
        duration: Duration
    ) {
        self.init(url: url, protocolName: protocolName, keys: [key], connections: connections, batch: batch, rate: rate, duration: duration)
    }

    /// Load from several tenants at once: connection `i` posts with `keys[i % keys.count]`.
    public init(
        url: String,
        protocolName: IngestProtocol = .native,
        keys: [String],
        connections: Int,
        batch: Int,
        rate: Double,
        duration: Duration
    ) {
        precondition(!keys.isEmpty, "at least one ingest key")
        self.url = url
        self.protocolName = protocolName
        self.keys = keys
        self.connections = connections
        self.batch = batch
        self.rate = rate
        self.duration = duration
    }

    /// What a run measured.
    public struct Report: Sendable {
        public var accepted = 0
        public var requests = 0
        public var errors: [String: Int] = [:]
        public var latencies: [Duration] = []
        public var elapsed: Duration = .zero

        public var eventsPerSecond: Double { Double(self.accepted) / self.elapsed.secondsDouble }

        public func percentile(_ p: Double) -> Duration {
            self.latencies.sorted().atQuantile(p) ?? .zero
        }

        mutating func merge(_ other: Report) {
            self.accepted += other.accepted
            self.requests += other.requests
            self.errors.merge(other.errors, uniquingKeysWith: +)
            self.latencies += other.latencies
        }

        public func printed(title: String) -> String {
            let errors = self.errors.isEmpty ? "none" : self.errors.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: ", ")
            return String(
                format: "%@: %.0f events/s accepted (%d events, %d requests in %.1f s); ack latency p50 %.2f ms, p99 %.2f ms; errors: %@",
                title,
                self.eventsPerSecond,
                self.accepted,
                self.requests,
                self.elapsed.secondsDouble,
                self.percentile(0.5).millisecondsDouble,
                self.percentile(0.99).millisecondsDouble,
                errors
            )
        }
    }

    /// Runs the load for ``duration`` and reports it.
    public func run() async throws -> Report {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: self.connections)
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(30))
        let client = ClientTrust.httpClient(configuration)
        let run = String(UInt64.random(in: 0..<UInt64.max), radix: 36)
        let start = ContinuousClock.now
        let deadline = start + self.duration
        // Each worker sends one batch every `interval` when paced.
        let interval: Duration? = self.rate > 0 ? .seconds(Double(self.batch * self.connections) / self.rate) : nil
        var report = try await withThrowingTaskGroup(of: Report.self) { group in
            for worker in 0..<self.connections {
                group.addTask {
                    try await self.worker(worker, run: run, client: client, deadline: deadline, interval: interval)
                }
            }
            var total = Report()
            for try await part in group { total.merge(part) }
            return total
        }
        report.elapsed = ContinuousClock.now - start
        try await client.shutdown()
        return report
    }

    private func worker(_ worker: Int, run: String, client: HTTPClient, deadline: ContinuousClock.Instant, interval: Duration?) async throws -> Report
    {
        var report = Report()
        var sequence = 0
        var next = ContinuousClock.now
        while ContinuousClock.now < deadline {
            if let interval {
                if next > ContinuousClock.now { try await Task.sleep(until: next) }
                next += interval
            }
            var request = HTTPClientRequest(url: self.url + self.path)
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(self.keys[worker % self.keys.count])")
            request.headers.add(name: "Content-Type", value: self.protocolName.contentType)
            request.body = .bytes(try self.body(worker: worker, run: run, sequence: &sequence))
            let sent = ContinuousClock.now
            do {
                let response = try await client.execute(request, timeout: .seconds(30))
                let answer = try await response.body.collect(upTo: 64 << 20)
                report.latencies.append(ContinuousClock.now - sent)
                report.requests += 1
                if response.status == .ok {
                    report.accepted += try self.acceptedCount(answer)
                } else {
                    report.errors["HTTP \(response.status.code)", default: 0] += 1
                }
            } catch {
                report.errors["\(type(of: error))", default: 0] += 1
            }
        }
        return report
    }

    private var path: String {
        switch self.protocolName {
        case .native: "/v1/ingest/events"
        case .otlpLogs, .otlpLogsJSON: "/v1/logs"
        case .otlpTraces: "/v1/traces"
        }
    }

    /// One request's body: `batch` items no earlier request had (so none is a duplicate).
    private func body(worker: Int, run: String, sequence: inout Int) throws -> ByteBuffer {
        switch self.protocolName {
        case .native:
            var body = "{\"events\":["
            body.reserveCapacity(self.batch * 150)
            for index in 0..<self.batch {
                if index > 0 { body += "," }
                body +=
                    "{\"msgId\":\"lg-\(run)-\(worker)-\(sequence)\",\"swarmId\":\"load\",\"agentId\":\"agent-\(worker)\",\"kind\":\"log\",\"level\":\"info\",\"message\":\"load test event \(sequence)\"}"
                sequence += 1
            }
            body += "]}"
            return ByteBuffer(string: body)
        case .otlpLogs, .otlpLogsJSON:
            let now = UInt64(Date().timeIntervalSince1970 * 1_000_000_000)
            var scope = Opentelemetry_Proto_Logs_V1_ScopeLogs()
            scope.logRecords = (0..<self.batch).map { index in
                var record = OTLPLogRecord()
                record.timeUnixNano = now + UInt64(index)
                record.severityNumber = .info
                record.body.stringValue = "load test record \(run) \(worker) \(sequence + index)"
                record.attributes = [OTLPKeyValue("session.id", "agent-\(worker)")]
                return record
            }
            sequence += self.batch
            var resourceLogs = Opentelemetry_Proto_Logs_V1_ResourceLogs()
            resourceLogs.resource.attributes = [OTLPKeyValue("swarmdeck.swarm.id", "load"), OTLPKeyValue("service.name", "swarmdeck-loadgen")]
            resourceLogs.scopeLogs = [scope]
            var export = OTLPExportLogsRequest()
            export.resourceLogs = [resourceLogs]
            if self.protocolName == .otlpLogsJSON {
                var options = JSONEncodingOptions()
                options.alwaysPrintEnumsAsInts = true
                return ByteBuffer(bytes: try export.jsonUTF8Bytes(options: options) as [UInt8])
            }
            return ByteBuffer(bytes: try export.serializedBytes() as [UInt8])
        case .otlpTraces:
            let now = UInt64(Date().timeIntervalSince1970 * 1_000_000_000)
            // Trace ids unique per run, worker and request; span ids per span within it.
            var trace = Data()
            withUnsafeBytes(of: (UInt64(run, radix: 36) ?? 0).bigEndian) { trace.append(contentsOf: $0) }
            withUnsafeBytes(of: (UInt64(worker) << 40 | UInt64(sequence)).bigEndian) { trace.append(contentsOf: $0) }
            var scope = Opentelemetry_Proto_Trace_V1_ScopeSpans()
            scope.spans = (0..<self.batch).map { index in
                var span = OTLPSpan()
                span.traceID = trace
                span.spanID = withUnsafeBytes(of: UInt64(index + 1).bigEndian) { Data($0) }
                span.name = "chat load-model"
                span.startTimeUnixNano = now
                span.endTimeUnixNano = now + 1_000_000
                span.attributes = [
                    OTLPKeyValue("gen_ai.operation.name", "chat"), OTLPKeyValue("gen_ai.request.model", "load-model"),
                    OTLPKeyValue("gen_ai.usage.input_tokens", Int64(100)), OTLPKeyValue("gen_ai.usage.output_tokens", Int64(20)),
                ]
                return span
            }
            sequence += self.batch
            var resourceSpans = Opentelemetry_Proto_Trace_V1_ResourceSpans()
            resourceSpans.resource.attributes = [
                OTLPKeyValue("swarmdeck.swarm.id", "load"), OTLPKeyValue("swarmdeck.agent.id", "agent-\(worker)"),
            ]
            resourceSpans.scopeSpans = [scope]
            var export = OTLPExportTraceRequest()
            export.resourceSpans = [resourceSpans]
            return ByteBuffer(bytes: try export.serializedBytes() as [UInt8])
        }
    }

    /// Events the answer accepted: a span is two (its trace event and its usage).
    private func acceptedCount(_ body: ByteBuffer) throws -> Int {
        switch self.protocolName {
        case .native:
            struct Counts: Decodable { var accepted: Int }
            return (try? JSONDecoder().decode(Counts.self, from: body))?.accepted ?? 0
        case .otlpLogs:
            return self.batch - Int(try OTLPExportLogsResponse(serializedBytes: Array(buffer: body)).partialSuccess.rejectedLogRecords)
        case .otlpLogsJSON:
            var options = JSONDecodingOptions()
            options.ignoreUnknownFields = true
            let answer = try OTLPExportLogsResponse(jsonUTF8Bytes: Array(buffer: body), options: options)
            return self.batch - Int(answer.partialSuccess.rejectedLogRecords)
        case .otlpTraces:
            return 2 * (self.batch - Int(try OTLPExportTraceResponse(serializedBytes: Array(buffer: body)).partialSuccess.rejectedSpans))
        }
    }
}
