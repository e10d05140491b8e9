public import Contracts
public import ServiceKit

/// The files deployment reads that are written from the registry (`swarmdeckd deploy write`),
/// so that a new service's line in ``ServiceRegistry/all`` reaches the local stack, the compose
/// edge and both stacks' NATS users without a hand edit. They are committed, so that the shell
/// scripts that read them need no build; `DeploymentFilesTests` fails when one is out of date.
public enum DeploymentFiles {
    /// A generated file: its path from the repository's root and its text.
    public struct File: Sendable, Equatable {
        public var path: String
        public var text: String
    }

    /// The local stack's first port: the n-th service of the registry listens on
    /// `firstLocalPort + n` (so a new service, added at the end, takes the next one).
    public static let firstLocalPort = 9101

    /// Every generated file, for `services` in the registry's order and the subject prefix
    /// `prefix` (the deployments leave it at its default).
    public static func all(
        services: [any SwarmdeckService.Type] = ServiceRegistry.all,
        prefix: String = Subjects.defaultPrefix
    ) throws -> [File] {
        [
            File(path: "deploy/local/services", text: Self.localServices(services)),
            File(path: "deploy/staging/nats-permissions.conf", text: try Self.natsPermissions(services, prefix: prefix)),
        ]
    }

    /// `deploy/local/services`: a line per service, `name port path-prefix…`, which the local
    /// stack runs and `scripts/sync-services` turns into the compose edge's locations.
    public static func localServices(_ services: [any SwarmdeckService.Type]) -> String {
        var lines = [
            "# Written by `swarmdeckd deploy write` from the registry of services (ServiceRegistry.all) and",
            "# each service's edgeRoutes; do not edit. The local stack (deploy/local/stack) runs a line each:",
            "#",
            "#   name  port  path-prefix...",
            "#",
            "# name         the service's name; the stack runs .build/debug/swarmdeckd <name>",
            "# port         its HTTP_PORT, on 127.0.0.1 (the registry's order from \(Self.firstLocalPort))",
            "# path-prefix  each becomes an nginx location on the edge (127.0.0.1:8080), and on the",
            "#              compose edge (scripts/sync-services), proxying to it, WebSocket upgrades included",
            "#",
        ]
        for (index, service) in services.enumerated() {
            lines.append("\(service.name)  \(Self.firstLocalPort + index)  \(service.edgeRoutes.joined(separator: " "))")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The NATS configuration variable that holds `service`'s permissions, e.g.
    /// `STREAM_FANOUT_PERMISSIONS`.
    public static func natsPermissionsVariable(_ name: String) -> String {
        String(name.uppercased().map { $0 == "-" ? "_" : $0 }) + "_PERMISSIONS"
    }

    /// `deploy/staging/nats-permissions.conf`: one NATS configuration variable per service
    /// holding its user's permissions (``SwarmdeckService/allNATSPermissions(_:)``), which
    /// `deploy/staging/secrets` puts in the `authorization` block of both stacks' `nats.conf`,
    /// each service's user naming its variable.
    public static func natsPermissions(_ services: [any SwarmdeckService.Type], prefix: String) throws -> String {
        let subjects = try Subjects(prefix: prefix)
        var lines = [
            "# Written by `swarmdeckd deploy write` from each service's natsPermissions (subject prefix",
            "# \(prefix)); do not edit. deploy/staging/secrets puts it in nats.conf's authorization block, and",
            "# each service's NATS user takes its variable as its permissions.",
        ]
        for service in services {
            let block = service.allNATSPermissions(subjects).configuration.split(separator: "\n")
            lines.append("\(Self.natsPermissionsVariable(service.name)) = \(block.first ?? "{")")
            lines += block.dropFirst().map(String.init)
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
