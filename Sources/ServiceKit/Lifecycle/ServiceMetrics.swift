import CHeap
import Foundation
import Metrics
public import Prometheus

/// The process's Prometheus registry; swift-metrics is bootstrapped onto it on first use.
public enum ServiceMetrics {
    public static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()

    private static let heapBytes = Self.registry.makeGauge(
        descriptor: MetricNameDescriptor(
            namespace: "process",
            metricName: "heap",
            unitName: "bytes",
            helpText: "Bytes the allocator has handed out and not had back (the live heap, not what the process keeps resident)"
        )
    )
    private static let residentBytes = Self.registry.makeGauge(
        descriptor: MetricNameDescriptor(
            namespace: "process",
            metricName: "resident_memory",
            unitName: "bytes",
            helpText: "Resident set size in bytes"
        )
    )

    /// Reads the process's live heap and resident set into `process_heap_bytes` and
    /// `process_resident_memory_bytes`: at each scrape of `/metrics`.
    public static func sampleProcess() {
        let heap = swarmdeck_heap_in_use()
        if heap > 0 { Self.heapBytes.set(Double(heap)) }
        // /proc/self/statm: size, resident, ... in pages.
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
            let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        {
            Self.residentBytes.set(Double(pages * Int(sysconf(Int32(_SC_PAGESIZE)))))
        }
    }
}
