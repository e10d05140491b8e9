import Foundation
public import Hummingbird
import Prometheus

extension Router where Context == ServiceRequestContext {
    /// The routes every service exposes, unauthenticated, for orchestrators and scrapers:
    /// - `GET /healthz`: 200 while the process serves HTTP (liveness).
    /// - `GET /readyz`: 200 when every check passes, else 503 in the error envelope naming
    ///   the failing dependencies (readiness: take the replica out of rotation).
    /// - `GET /metrics`: Prometheus text format, with the process's live heap and resident set
    ///   read at the scrape (`process_heap_bytes`, `process_resident_memory_bytes`).
    public func addOperationalRoutes(readiness checks: [ReadinessCheck]) {
        self.addOperationalRoutes(readiness: ReadinessChecks(checks))
    }

    /// The operational routes, with readiness checks that may still be added to after this call.
    public func addOperationalRoutes(readiness registry: ReadinessChecks) {
        self.get("/healthz") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        self.get("/readyz") { _, context in
            let checks = registry.all
            let failing = await withTaskGroup(of: String?.self) { group in
                for check in checks {
                    group.addTask { await check.probe() ? nil : check.name }
                }
                return await group.reduce(into: [String]()) { if let name = $1 { $0.append(name) } }
            }
            guard failing.isEmpty else {
                throw APIError(
                    .serviceUnavailable,
                    "not ready: \(failing.sorted().joined(separator: ", ")) unavailable",
                    retryAfterSeconds: 1
                )
            }
            return Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ready"}"#))
            )
        }
        self.get("/metrics") { _, _ in
            ServiceMetrics.sampleProcess()
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: ServiceMetrics.registry.emitToBuffer()))
            )
        }
    }
}

extension Router where Context == ServiceRequestContext {
    /// A router with the middleware every service uses, outermost first: request id, metrics,
    /// error envelope.
    public static func service() -> Router<ServiceRequestContext> {
        _ = ServiceMetrics.registry
        let router = Router(context: ServiceRequestContext.self)
        router.add(middleware: RequestIDMiddleware())
        router.add(middleware: MetricsMiddleware())
        router.add(middleware: ErrorEnvelopeMiddleware())
        return router
    }
}
