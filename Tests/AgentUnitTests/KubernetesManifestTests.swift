import Foundation
import ServiceKit
import SwarmdeckServices
import Testing

@Suite("Kubernetes manifests and monitoring from the registry (unit; scripts/check-deploy validates the renders)")
struct KubernetesManifestTests {
    @Test(
        "each service has its Deployment, Services, budget and policy; only ingest and the fanout autoscale; only the signer mounts the private key"
    )
    func services() {
        let text = DeploymentFiles.kubernetesServices(ServiceRegistry.all)
        for service in ServiceRegistry.all {
            let documents = text.components(separatedBy: "---\n").filter { $0.contains("app.kubernetes.io/name: \(service.name)\n") }
            let kinds = documents.compactMap { $0.split(separator: "\n").first { $0.hasPrefix("kind: ") } }.map { String($0.dropFirst(6)) }
            let autoscaled = ["ingest", "stream-fanout"].contains(service.name)
            #expect(kinds.filter { $0 == "Deployment" }.count == 1, "\(service.name): \(kinds)")
            #expect(kinds.filter { $0 == "Service" }.count == 2, "\(service.name): \(kinds)")
            let deployment = documents.first { $0.contains("kind: Deployment") } ?? ""
            #expect(deployment.contains("command: [\"swarmdeckd\", \"\(service.name)\"]"))
            #expect(deployment.contains("path: /readyz") && deployment.contains("path: /healthz"))
            let signs = service.settingsKeys.contains { $0.name == "auth.jwt.private-key-file" }
            #expect(deployment.contains("key: private-key") == signs, "\(service.name)")
            #expect(text.contains("kind: HorizontalPodAutoscaler\nmetadata:\n  name: \(service.name)\n") == autoscaled, "\(service.name)")
        }
        #expect(!text.contains("kind: Secret"))
    }

    @Test("the Ingress routes each edge route to its service; a route beside the same one with a slash is exact, the other a prefix")
    func ingress() {
        let text = DeploymentFiles.kubernetesIngress(ServiceRegistry.all)
        #expect(text.contains("- path: /v1/traces\n            pathType: Exact\n            backend: {service: {name: ingest,"))
        #expect(text.contains("- path: /v1/traces\n            pathType: Prefix\n            backend: {service: {name: control-api,"))
        for service in ServiceRegistry.all {
            for route in service.edgeRoutes where route != "/v1/traces" && route != "/v1/traces/" {
                #expect(
                    text.contains("- path: \(route)\n            pathType: Prefix\n            backend: {service: {name: \(service.name),"),
                    "\(route)"
                )
            }
        }
    }

    @Test("Prometheus scrapes each service's pods by DNS and labels them; each dashboard is valid JSON over its service's series")
    func monitoring() throws {
        let configuration = DeploymentFiles.prometheusConfiguration(ServiceRegistry.all)
        for service in ServiceRegistry.all {
            #expect(configuration.contains("- job_name: \(service.name)\n"))
            #expect(configuration.contains("[\(service.name)-pods.swarmdeck.svc.cluster.local]"))
            let dashboard = try JSONSerialization.jsonObject(with: Data(DeploymentFiles.grafanaDashboard(service).utf8)) as? [String: Any]
            #expect(dashboard?["uid"] as? String == "swarmdeck-\(service.name)")
            let panels = dashboard?["panels"] as? [[String: Any]] ?? []
            #expect(panels.count >= 6)
            for panel in panels {
                let expression = ((panel["targets"] as? [[String: Any]])?.first?["expr"] as? String) ?? ""
                #expect(expression.contains("service=\"\(service.name)\""), "\(expression)")
            }
        }
    }
}
