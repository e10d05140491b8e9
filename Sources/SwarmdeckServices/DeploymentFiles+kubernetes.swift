public import ServiceKit

extension DeploymentFiles {
    /// The services that scale out with their load, each with a HorizontalPodAutoscaler: ingest
    /// (events) and stream-fanout (phones).
    static let autoscaled: Set<String> = ["ingest", "stream-fanout"]

    /// `deploy/k8s/base/services.yaml`: for each service, its Deployment (`swarmdeckd <name>`,
    /// two replicas, probes on `/healthz` and `/readyz`, resources, no privilege, its credentials
    /// mounted from Secrets the cluster holds, never from the manifests), Service,
    /// PodDisruptionBudget and NetworkPolicy (only the edge's ingress controller and the
    /// monitoring namespace reach it), and a HorizontalPodAutoscaler for those that scale with
    /// load. What a service needs beyond the registry's facts (a volume, a key) is an overlay's
    /// patch (deploy/k8s/base/kustomization.yaml has terminal-broker's and pipeline-runner's).
    public static func kubernetesServices(_ services: [any SwarmdeckService.Type]) -> String {
        var documents: [String] = []
        for service in services {
            documents += Self.kubernetesDocuments(service)
        }
        return "# Written by `swarmdeckd deploy write` from the service registry; do not edit (patch in an overlay).\n"
            + documents.map { "---\n" + $0 }.joined()
    }

    /// An object's `metadata` named `name`, with the labels of the service `labelled` names.
    static func kubernetesMetadata(_ name: String, labelled service: String? = nil) -> String {
        """
        metadata:
          name: \(name)
          labels:
            app.kubernetes.io/name: \(service ?? name)
            app.kubernetes.io/part-of: swarmdeck
        """
    }

    static func kubernetesDocuments(_ service: any SwarmdeckService.Type) -> [String] {
        let name = service.name
        let keys = service.settingsKeys
        let signs = keys.contains { $0.name == "auth.jwt.private-key-file" }
        let labels = "app.kubernetes.io/name: \(name)\n      app.kubernetes.io/part-of: swarmdeck"
        var environment: [String] = []
        if signs { environment += ["        - name: AUTH_JWT_PRIVATE_KEY_FILE", "          value: /run/keys/jwt-es256.pem"] }
        if let web = keys.first(where: { $0.name.hasSuffix(".web-base-url") }) {
            environment += [
                "        - name: \(web.environmentName)", "          valueFrom: {configMapKeyRef: {name: swarmdeck-settings, key: WEB_BASE_URL}}",
            ]
        }
        if let proxies = keys.first(where: { $0.name.hasSuffix(".trusted-proxies") }) {
            // Only the ingress controller reaches it (its NetworkPolicy).
            environment += ["        - name: \(proxies.environmentName)", "          value: \"*\""]
        }
        var jwtItems = ["              - {key: public-key, path: jwt-es256.pem.pub}"]
        if signs { jwtItems.append("              - {key: private-key, path: jwt-es256.pem}") }
        let deployment = """
            apiVersion: apps/v1
            kind: Deployment
            \(Self.kubernetesMetadata(name))
            spec:
            \(Self.autoscaled.contains(name) ? "" : "  replicas: 2\n")\
              selector:
                matchLabels:
                  app.kubernetes.io/name: \(name)
              strategy:
                type: RollingUpdate
                rollingUpdate: {maxUnavailable: 0, maxSurge: 1}
              template:
                metadata:
                  labels:
                    \(labels.replacingOccurrences(of: "\n      ", with: "\n        "))
                  annotations:
                    prometheus.io/scrape: "true"
                    prometheus.io/port: "8080"
                    prometheus.io/path: /metrics
                spec:
                  automountServiceAccountToken: false
                  # On SIGTERM the service stops taking requests and finishes those in flight;
                  # the preStop pause first lets the Ingress take the pod out of its rotation.
                  terminationGracePeriodSeconds: 30
                  securityContext:
                    runAsNonRoot: true
                    runAsUser: 10001
                    runAsGroup: 10001
                    fsGroup: 10001
                    seccompProfile: {type: RuntimeDefault}
                  containers:
                    - name: \(name)
                      image: swarmdeck
                      command: ["swarmdeckd", "\(name)"]
                      ports:
                        - {name: http, containerPort: 8080}
                      lifecycle:
                        preStop:
                          exec: {command: ["sleep", "5"]}
                      envFrom:
                        - configMapRef: {name: swarmdeck-settings}
            \(environment.isEmpty ? "" : "          env:\n" + environment.map { "    " + $0 }.joined(separator: "\n") + "\n")\
                      startupProbe:
                        httpGet: {path: /healthz, port: http}
                        periodSeconds: 2
                        failureThreshold: 60
                      livenessProbe:
                        httpGet: {path: /healthz, port: http}
                        periodSeconds: 10
                        failureThreshold: 6
                      readinessProbe:
                        httpGet: {path: /readyz, port: http}
                        periodSeconds: 5
                        failureThreshold: 3
                      resources:
                        requests: {cpu: 250m, memory: 256Mi}
                        limits: {memory: 1Gi}
                      securityContext:
                        allowPrivilegeEscalation: false
                        readOnlyRootFilesystem: true
                        capabilities: {drop: [ALL]}
                      volumeMounts:
                        # The secrets folder reads regular files only (a secret volume's keys are
                        # links): each credential mounted on its own.
                        - {name: credentials, mountPath: /run/secrets/postgres-url, subPath: postgres-url, readOnly: true}
                        - {name: credentials, mountPath: /run/secrets/nats-url, subPath: nats-url, readOnly: true}
                        - {name: keys, mountPath: /run/keys, readOnly: true}
                        - {name: tmp, mountPath: /tmp}
                  volumes:
                    # Its own credentials and the keys: Secrets the cluster holds
                    # (docs/kubernetes.md), never in these manifests.
                    - name: credentials
                      secret:
                        secretName: \(name)-credentials
                        items:
                          - {key: postgres-url, path: postgres-url}
                          - {key: nats-url, path: nats-url}
                    - name: keys
                      projected:
                        sources:
                          - secret:
                              name: swarmdeck-jwt
                              items:
            \(jwtItems.map { "      " + $0 }.joined(separator: "\n"))
                    - name: tmp
                      emptyDir: {sizeLimit: 64Mi}

            """
        let serviceDocument = """
            apiVersion: v1
            kind: Service
            \(Self.kubernetesMetadata(name))
            spec:
              selector:
                app.kubernetes.io/name: \(name)
              ports:
                - {name: http, port: 80, targetPort: http}

            """
        let budget = """
            apiVersion: policy/v1
            kind: PodDisruptionBudget
            metadata:
              name: \(name)
            spec:
              maxUnavailable: 1
              selector:
                matchLabels:
                  app.kubernetes.io/name: \(name)

            """
        let policy = """
            # Reached only by the ingress controller (the edge) and Prometheus.
            apiVersion: networking.k8s.io/v1
            kind: NetworkPolicy
            metadata:
              name: \(name)
            spec:
              podSelector:
                matchLabels:
                  app.kubernetes.io/name: \(name)
              policyTypes: [Ingress]
              ingress:
                - from:
                    - namespaceSelector:
                        matchLabels: {swarmdeck.dev/edge: "true"}
                    - namespaceSelector:
                        matchLabels: {swarmdeck.dev/monitoring: "true"}
                  ports:
                    - {port: http}

            """
        // Each pod's address by DNS, for Prometheus (deploy/monitoring/prometheus.yml): not-ready
        // pods too, so that one down is seen as down.
        let pods = """
            apiVersion: v1
            kind: Service
            \(Self.kubernetesMetadata(name + "-pods", labelled: name))
            spec:
              clusterIP: None
              publishNotReadyAddresses: true
              selector:
                app.kubernetes.io/name: \(name)
              ports:
                - {name: http, port: 8080, targetPort: http}

            """
        var documents = [deployment, serviceDocument, pods, budget, policy]
        if Self.autoscaled.contains(name) {
            documents.append(
                """
                apiVersion: autoscaling/v2
                kind: HorizontalPodAutoscaler
                metadata:
                  name: \(name)
                spec:
                  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: \(name)}
                  minReplicas: 2
                  maxReplicas: 10
                  metrics:
                    - type: Resource
                      resource:
                        name: cpu
                        target: {type: Utilization, averageUtilization: 70}

                """
            )
        }
        return documents
    }

    /// `deploy/k8s/base/ingress.yaml`: the edge as an Ingress, each service's routes
    /// (``SwarmdeckService/edgeRoutes``) to its Service (the longest path wins, as at the
    /// compose edge).
    public static func kubernetesIngress(_ services: [any SwarmdeckService.Type]) -> String {
        let routes = services.flatMap { service in service.edgeRoutes.map { (path: $0, service: service.name) } }
            .sorted { $0.path.count != $1.path.count ? $0.path.count > $1.path.count : $0.path < $1.path }
        var lines = [
            "# Written by `swarmdeckd deploy write` from the service registry; do not edit (patch in an overlay).",
            "# The edge: each service's routes to its Service. WebSockets (/v1/stream, /v1/acp, the",
            "# terminals) need the controller's long read timeouts (docs/kubernetes.md).",
            "apiVersion: networking.k8s.io/v1",
            "kind: Ingress",
            "metadata:",
            "  name: swarmdeck",
            "  annotations:",
            "    nginx.ingress.kubernetes.io/proxy-read-timeout: \"3600\"",
            "    nginx.ingress.kubernetes.io/proxy-send-timeout: \"3600\"",
            "    nginx.ingress.kubernetes.io/proxy-body-size: 16m",
            "    # As the compose edge: a body goes to the service as it comes (ingest refuses a tenant",
            "    # over its rate before reading it), and the API is served over TLS only.",
            "    nginx.ingress.kubernetes.io/proxy-request-buffering: \"off\"",
            "    nginx.ingress.kubernetes.io/force-ssl-redirect: \"true\"",
            "spec:",
            "  ingressClassName: nginx",
            "  tls:",
            "    - hosts: [swarmdeck.example.com]",
            "      secretName: swarmdeck-tls",
            "  rules:",
            "    - host: swarmdeck.example.com",
            "      http:",
            "        paths:",
        ]
        // An Ingress's prefix ignores a trailing slash: a route `/x` beside `/x/` (ingest's OTLP
        // `/v1/traces`, control-api's `/v1/traces/…`) is exact, and wins over the prefix.
        let paths = Set(routes.map(\.path))
        for route in routes {
            let exact = !route.path.hasSuffix("/") && paths.contains(route.path + "/")
            lines += [
                "          - path: \(route.path.hasSuffix("/") && route.path.count > 1 ? String(route.path.dropLast()) : route.path)",
                "            pathType: \(exact ? "Exact" : "Prefix")",
                "            backend: {service: {name: \(route.service), port: {name: http}}}",
            ]
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension DeploymentFiles {
    /// The prefix of the figures a service exports of its own (beyond every service's HTTP and
    /// process figures), where it has any.
    static let metricPrefixes = ["ingest": "ingest", "stream-fanout": "fanout", "health-monitor": "health", "notifier": "notifier"]

    /// `deploy/monitoring/dashboards/<name>.json`: a Grafana dashboard of what every service
    /// exports at `/metrics` (requests and their errors by route, the 99th percentile of their
    /// duration, resident and heap memory, replicas up) and the service's own figures, over the
    /// `service` label the scrape configuration (deploy/monitoring/prometheus.yml) gives each pod.
    public static func grafanaDashboard(_ service: any SwarmdeckService.Type) -> String {
        let selector = "service=\\\"\(service.name)\\\""
        var panels: [(title: String, expression: String, unit: String)] = [
            ("Replicas up", "sum(up{\(selector)})", "short"),
            ("Requests/s by route", "sum by (http_route) (rate(hb_requests{\(selector)}[5m]))", "reqps"),
            ("Errors/s by route and status", "sum by (http_route, error_type) (rate(hb_request_errors{\(selector)}[5m]))", "reqps"),
            (
                "Request duration, 99th percentile",
                "histogram_quantile(0.99, sum by (le) (rate(http_server_request_duration_bucket{\(selector)}[5m])))", "s"
            ),
            ("Resident memory by pod", "process_resident_memory_bytes{\(selector)}", "bytes"),
            ("Live heap by pod", "process_heap_bytes{\(selector)}", "bytes"),
        ]
        if let prefix = Self.metricPrefixes[service.name] {
            // No function over them, so each series keeps its name (rate() would drop it).
            let own = "__name__=~\\\"\(prefix)_.+"
            panels.append(("\(service.name)'s own counters (cumulative)", "{\(own)_total\\\", \(selector)}", "short"))
            panels.append(
                ("\(service.name)'s own gauges", "{\(own)\\\", __name__!~\\\".+_(total|bucket|sum|count)\\\", \(selector)}", "short")
            )
        }
        let panelJSON = panels.enumerated().map { index, panel in
            """
                {
                  "id": \(index + 1),
                  "type": "timeseries",
                  "title": "\(panel.title)",
                  "datasource": {"type": "prometheus", "uid": "${datasource}"},
                  "gridPos": {"h": 8, "w": 12, "x": \(index % 2 * 12), "y": \(index / 2 * 8)},
                  "fieldConfig": {"defaults": {"unit": "\(panel.unit)"}, "overrides": []},
                  "targets": [{"refId": "A", "expr": "\(panel.expression)"}]
                }
            """
        }
        return """
            {
              "title": "Swarmdeck: \(service.name)",
              "uid": "swarmdeck-\(service.name)",
              "description": "Written by `swarmdeckd deploy write` from the service registry; do not edit.",
              "schemaVersion": 39,
              "tags": ["swarmdeck"],
              "time": {"from": "now-6h", "to": "now"},
              "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"}]},
              "panels": [
            \(panelJSON.joined(separator: ",\n"))
              ]
            }

            """
    }
}

extension DeploymentFiles {
    /// The namespace the production overlay deploys to, which Prometheus's scrape names.
    static let kubernetesNamespace = "swarmdeck"

    /// `deploy/monitoring/prometheus.yml`: a scrape job per service, its pods found by DNS
    /// (each service's headless `<name>-pods` Service, in `deploy/k8s/base/services.yaml`), each
    /// series labelled with its `service` and `system="swarmdeck"`; the alert rules beside it.
    /// DNS discovery rather than Kubernetes': Debian's Prometheus is built without the latter,
    /// and this needs no API access for Prometheus.
    public static func prometheusConfiguration(_ services: [any SwarmdeckService.Type]) -> String {
        var lines = [
            "# Written by `swarmdeckd deploy write` from the service registry; do not edit. Prometheus's",
            "# scrape configuration for Swarmdeck on Kubernetes (docs/kubernetes.md), namespace \(Self.kubernetesNamespace)",
            "# (another namespace: change the names below). promtool checks it in the test command.",
            "global:",
            "  scrape_interval: 15s",
            "  evaluation_interval: 15s",
            "rule_files:",
            "  - alerts.yml",
            "scrape_configs:",
        ]
        for service in services {
            lines += [
                "  - job_name: \(service.name)",
                "    metrics_path: /metrics",
                "    dns_sd_configs:",
                "      - names: [\(service.name)-pods.\(Self.kubernetesNamespace).svc.cluster.local]",
                "        type: A",
                "        port: 8080",
                "    relabel_configs:",
                "      - {target_label: service, replacement: \(service.name)}",
                "      - {target_label: system, replacement: swarmdeck}",
            ]
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
