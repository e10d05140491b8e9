import Metrics
public import Prometheus

/// The process's Prometheus registry; swift-metrics is bootstrapped onto it on first use.
public enum ServiceMetrics {
    public static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()
}
