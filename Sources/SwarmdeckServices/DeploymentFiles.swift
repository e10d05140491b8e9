public import Contracts
import Ingest
public import ServiceKit

/// The files deployment reads that are written from the registry (`swarmdeckd deploy write`),
/// so that a new service's line in ``ServiceRegistry/all`` reaches the local stack, the compose
/// edge and both stacks' NATS users without a hand edit. They are committed, so that the shell
/// scripts that read them need no build; `ServiceRegistryTests` fails when one is out of date.
public enum DeploymentFiles {
    /// A generated file, or the generated sections of a hand-written one: its path from the
    /// repository's root and its text made from its current one (nil when it does not exist).
    public struct File: Sendable {
        public var path: String
        public var render: @Sendable (String?) throws -> String

        /// A file written whole.
        init(path: String, text: String) {
            self.path = path
            self.render = { _ in text }
        }

        /// A hand-written file whose sections between markers are written, then `completing`
        /// applied (what else the file must have, added where it lacks it).
        init(
            path: String,
            sections: [(begin: String, end: String, body: String)],
            completing: @escaping @Sendable (String) throws -> String = { $0 }
        ) {
            self.path = path
            self.render = { current in
                guard let current else { throw DeploymentError("\(path) is missing") }
                let written = try sections.reduce(current) { text, section in
                    guard let written = text.replacingSection(between: section.begin, and: section.end, with: section.body) else {
                        throw DeploymentError("\(path) lacks the lines '\(section.begin)' and '\(section.end)'")
                    }
                    return written
                }
                return try completing(written)
            }
        }
    }

    /// How far the local stack's ports are from the services' default ports: a service listens
    /// on its ``SwarmdeckService/defaultPort`` plus this (ingest's 8081 → 9101), so its port
    /// depends on its own declaration, not on its place in the registry.
    public static let localPortOffset = 1020

    /// The port the local stack gives `service`.
    public static func localPort(_ service: any SwarmdeckService.Type) -> Int {
        service.defaultPort + Self.localPortOffset
    }

    /// Every generated file, for `services` in the registry's order and the subject prefix
    /// `prefix` (the deployments leave it at its default).
    public static func all(
        services: [any SwarmdeckService.Type] = ServiceRegistry.all,
        prefix: String = Subjects.defaultPrefix
    ) throws -> [File] {
        [
            File(path: "deploy/local/services", text: Self.localServices(services)),
            File(path: "deploy/staging/nats-permissions.conf", text: try Self.natsPermissions(services, prefix: prefix)),
            File(path: "deploy/staging/postgres-roles.sql", text: try Self.postgresRoles(services)),
            File(path: "docker-compose.yml", sections: Self.composeSections(services)) { try Self.composeAddingBlocks($0, services) },
            File(path: "deploy/staging/cluster/compose.yml", sections: Self.clusterComposeSections(services)),
            File(path: "deploy/k8s/base/services.yaml", text: Self.kubernetesServices(services)),
            File(path: "deploy/k8s/base/ingress.yaml", text: Self.kubernetesIngress(services)),
            File(path: "deploy/monitoring/prometheus.yml", text: Self.prometheusConfiguration(services)),
        ] + services.map { File(path: "deploy/monitoring/dashboards/\($0.name).json", text: Self.grafanaDashboard($0)) }
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
            "# port         its HTTP_PORT, on 127.0.0.1 (its default port + \(Self.localPortOffset))",
            "# path-prefix  each becomes an nginx location on the edge (127.0.0.1:8080), and on the",
            "#              compose edge (scripts/sync-services), proxying to it, WebSocket upgrades included",
            "#",
        ]
        for service in services {
            lines.append("\(service.name)  \(Self.localPort(service))  \(service.edgeRoutes.joined(separator: " "))")
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

    /// `deploy/staging/postgres-roles.sql`: the database; each service's role
    /// (``SwarmdeckService/postgresRole``) with its password from `SECRETS_DIR`, owning its
    /// schema (``SwarmdeckService/defaultSchema``) and nothing else, what it holds there handed to
    /// it (a schema an older local stack made under another owner); and `ingest_reader`, read-only
    /// on the event log, granted to the services that read it. Staging's Postgres entrypoint
    /// runs it on every start and the local stack on every up, as a superuser; idempotent.
    public static func postgresRoles(_ services: [any SwarmdeckService.Type]) throws -> String {
        let owners = try services.map { service in
            guard let schema = service.defaultSchema else {
                throw DeploymentError("\(service.name) declares no schema key (one key '<namespace>.schema')")
            }
            return (service: service, role: service.postgresRole, schema: schema)
        }
        guard let log = owners.first(where: { ObjectIdentifier($0.service) == ObjectIdentifier(IngestService.self) }) else {
            throw DeploymentError("the registry lacks ingest, whose schema the event log's readers read")
        }
        let roles = owners.map(\.role)
        let readers = owners.filter { $0.service.readsEventLog }.map(\.role)
        var lines = [
            "-- Written by `swarmdeckd deploy write` from the registry of services; do not edit. The database,",
            "-- the roles the services log in as, each owning its schema and nothing else, and ingest_reader. Run",
            "-- as a superuser by psql with SECRETS_DIR naming the folder of the pg-*-password files: by",
            "-- staging's Postgres entrypoint on every start and by the local stack on every up. Idempotent.",
            "SELECT 'CREATE DATABASE swarmdeck' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'swarmdeck') \\gexec",
            "REVOKE ALL ON DATABASE swarmdeck FROM PUBLIC;",
            "\\connect swarmdeck",
            "REVOKE ALL ON SCHEMA public FROM PUBLIC;",
            "\\set postgres_pw `cat \"$SECRETS_DIR/pg-postgres-password\"`",
        ]
        lines += owners.map { "\\set \($0.role)_pw `cat \"$SECRETS_DIR/pg-\($0.service.name)-password\"`" }
        lines.append(
            "SELECT format('CREATE ROLE %I NOLOGIN', r) FROM unnest(ARRAY[\((roles + ["ingest_reader"]).map { "'\($0)'" }.joined(separator: ", "))]) AS r"
        )
        lines.append(" WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) \\gexec")
        lines.append("ALTER ROLE postgres PASSWORD :'postgres_pw';")
        lines += roles.map { "ALTER ROLE \($0) LOGIN PASSWORD :'\($0)_pw';" }
        lines.append(
            "-- Each role's search_path and timeouts, for services behind a transaction pooler (postgres.role-settings);"
        )
        lines.append("-- connection parameters, which services send otherwise, win over them.")
        for owner in owners {
            guard let session = owner.service.defaultPostgresSession else { continue }
            lines += session.roleSQL(role: owner.role).split(separator: "\n").map(String.init)
        }
        lines.append("GRANT CONNECT ON DATABASE swarmdeck TO \(roles.joined(separator: ", "));")
        lines += owners.map { "CREATE SCHEMA IF NOT EXISTS \($0.schema) AUTHORIZATION \($0.role);" }
        lines += [
            "-- The event log's readers: USAGE on its schema and SELECT on every table its owner makes there.",
            "GRANT USAGE ON SCHEMA \(log.schema) TO ingest_reader;",
            "ALTER DEFAULT PRIVILEGES FOR ROLE \(log.role) IN SCHEMA \(log.schema) GRANT SELECT ON TABLES TO ingest_reader;",
            "GRANT SELECT ON ALL TABLES IN SCHEMA \(log.schema) TO ingest_reader;",
        ]
        if !readers.isEmpty { lines.append("GRANT ingest_reader TO \(readers.joined(separator: ", "));") }
        // A service that no longer reads the log loses the grant an earlier script gave it.
        let others = roles.filter { !readers.contains($0) }
        if !others.isEmpty {
            lines += [
                "SELECT format('REVOKE ingest_reader FROM %I', u.rolname) FROM pg_auth_members m",
                " JOIN pg_roles g ON g.oid = m.roleid JOIN pg_roles u ON u.oid = m.member",
                " WHERE g.rolname = 'ingest_reader' AND u.rolname IN (\(others.map { "'\($0)'" }.joined(separator: ", "))) \\gexec",
            ]
        }
        let ownersJSON = owners.map { "\"\($0.schema)\": \"\($0.role)\"" }.joined(separator: ", ")
        lines += [
            "-- Each schema and what is in it belong to its service's role (a schema an older local stack made",
            "-- under another owner is handed over; nothing changes where the owners are right already).",
            "DO $$",
            "DECLARE",
            "    owners CONSTANT jsonb := '{\(ownersJSON)}';",
            "    schema text;",
            "    owner text;",
            "    item record;",
            "BEGIN",
            "    FOR schema, owner IN SELECT key, value FROM jsonb_each_text(owners) LOOP",
            "        EXECUTE format('ALTER SCHEMA %I OWNER TO %I', schema, owner);",
            "        -- Tables first: their indexes and the sequences of their columns follow them.",
            "        FOR item IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace",
            "            WHERE n.nspname = schema AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND c.relowner <> owner::regrole",
            "        LOOP",
            "            EXECUTE format('ALTER TABLE %I.%I OWNER TO %I', schema, item.relname, owner);",
            "        END LOOP;",
            "        FOR item IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace",
            "            WHERE n.nspname = schema AND c.relkind = 'S' AND c.relowner <> owner::regrole",
            "                -- A column's sequence (serial, identity) goes with its table.",
            "                AND NOT EXISTS (SELECT 1 FROM pg_depend d",
            "                    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i'))",
            "        LOOP",
            "            EXECUTE format('ALTER SEQUENCE %I.%I OWNER TO %I', schema, item.relname, owner);",
            "        END LOOP;",
            "        FOR item IN SELECT p.oid::regprocedure AS routine FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace",
            "            WHERE n.nspname = schema AND p.proowner <> owner::regrole",
            "        LOOP",
            "            EXECUTE format('ALTER ROUTINE %s OWNER TO %I', item.routine, owner);",
            "        END LOOP;",
            "    END LOOP;",
            "END",
            "$$;",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// The line of `docker-compose.yml` above which `deploy write` adds the block of a service
    /// that has none.
    public static let newBlocksMarker =
        "  # New services' blocks are added above this line by `swarmdeckd deploy write`, from the registry (then they are yours to edit)."

    /// `compose` with a block (``composeBlock(_:)``) for each of `services` that has none, above
    /// ``newBlocksMarker``; the blocks it has are left as they are (each is hand-edited:
    /// `ServiceRegistryTests` checks what the registry says of them).
    public static func composeAddingBlocks(_ compose: String, _ services: [any SwarmdeckService.Type]) throws -> String {
        var lines = compose.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // The blocks are the keys of `services:`, up to the next top-level key.
        guard let start = lines.firstIndex(of: "services:") else { throw DeploymentError("docker-compose.yml has no services: section") }
        let end = lines[(start + 1)...].firstIndex { $0.first.map { $0.isLetter } ?? false } ?? lines.endIndex
        let blocks = Set(lines[start..<end])
        let missing = services.filter { !blocks.contains("  \($0.name):") }
        guard !missing.isEmpty else { return compose }
        guard let marker = lines[start..<end].firstIndex(of: Self.newBlocksMarker) else {
            throw DeploymentError(
                "docker-compose.yml has no block for \(missing.map { $0.name }.joined(separator: ", ")), and lacks the line '\(Self.newBlocksMarker)' under services: to add them above"
            )
        }
        lines.insert(contentsOf: missing.flatMap { Self.composeBlock($0) + [""] }, at: marker)
        return lines.joined(separator: "\n")
    }

    /// A service's first block in `docker-compose.yml`, from what the registry says of it: it
    /// runs as `swarmdeckd <name>` on the shared settings, behind the edge (its trusted proxies
    /// every peer, its deep links the edge's URL), with the public key, its own Postgres and NATS
    /// credentials (and control-api's private key when it signs), after ingest when it reads
    /// the event log. Its required settings that have no default are named in a comment: the
    /// block is the team's to complete.
    public static func composeBlock(_ service: any SwarmdeckService.Type) -> [String] {
        let keys = service.settingsKeys
        func key(_ suffix: String) -> SettingKey? { keys.first { $0.name.hasSuffix(suffix) } }
        var environment = ["      <<: *environment"]
        var secrets = ["      - source: jwt_public_key", "        target: jwt-es256.pem.pub"]
        let signs = keys.contains { $0.name == "auth.jwt.private-key-file" }
        if signs {
            environment.append("      AUTH_JWT_PRIVATE_KEY_FILE: /run/secrets/jwt-es256.pem")
            secrets += ["      - source: jwt_private_key", "        target: jwt-es256.pem"]
        }
        if let web = key(".web-base-url") {
            environment.append("      \(web.environmentName): ${SWARMDECK_WEB_BASE_URL:-https://localhost:8443}")
        }
        if let proxies = key(".trusted-proxies") {
            environment.append("      \(proxies.environmentName): \"*\"  # only the edge reaches it")
        }
        secrets += [
            "      - source: \(service.postgresRole)_postgres_url", "        target: postgres-url",
            "      - source: \(service.postgresRole)_nats_url", "        target: nats-url",
        ]
        let unset = keys.filter { $0.defaultValue == nil && !$0.isOptional && !($0.name == "auth.jwt.private-key-file" && signs) }
        var block = ["  # \(service.name): written by `swarmdeckd deploy write` from the registry; yours to edit."]
        if !unset.isEmpty {
            block.append("  # It does not start until its environment sets \(unset.map(\.environmentName).joined(separator: ", ")).")
        }
        block += ["  \(service.name):", "    <<: *service", "    command: [\"swarmdeckd\", \"\(service.name)\"]", "    environment:"]
        block += environment
        block.append("    secrets:")
        block += secrets
        if service.readsEventLog {
            block += [
                "    depends_on:", "      <<: *infra", "      ingest:",
                "        condition: service_healthy  # ingest migrates the event log \(service.name) reads",
            ]
        }
        return block
    }

    /// The sections of `docker-compose.yml` written from the registry: the Postgres
    /// container's password files (one per service's role, and the superuser's) and the
    /// definitions of every service's credentials (its `postgres-url`, `nats-url` and Postgres
    /// password, from `deploy/staging/secrets`' folder). Each service's own block is written once
    /// (``composeAddingBlocks(_:_:)``), then by hand (its environment, its other secrets, what it
    /// waits for).
    public static func composeSections(_ services: [any SwarmdeckService.Type]) -> [(begin: String, end: String, body: String)] {
        let passwords = ["postgres"] + services.map { $0.name }
        let folder = "${SWARMDECK_SECRETS:-./deploy/staging/secrets.d}"
        var definitions: [String] = []
        for service in services {
            definitions += [
                "  \(service.postgresRole)_postgres_url:", "    file: \(folder)/\(service.name).postgres-url",
                "  \(service.postgresRole)_nats_url:", "    file: \(folder)/\(service.name).nats-url",
            ]
        }
        for name in passwords {
            definitions += ["  pg-\(name)-password:", "    file: \(folder)/pg-\(name)-password"]
        }
        return [
            (
                "      # BEGIN postgres passwords: written by `swarmdeckd deploy write` from the registry; do not edit",
                "      # END postgres passwords",
                Self.passwordSecrets(passwords)
            ),
            (
                "  # BEGIN services' credentials: written by `swarmdeckd deploy write` from the registry; do not edit",
                "  # END services' credentials",
                definitions.map { $0 + "\n" }.joined()
            ),
        ]
    }

    /// The sections of `deploy/staging/cluster/compose.yml` written from the registry: every
    /// service taking the cluster's settings, the second Patroni node's password files (as the
    /// first's in `docker-compose.yml`) and PgBouncer's (the services' roles).
    public static func clusterComposeSections(_ services: [any SwarmdeckService.Type]) -> [(begin: String, end: String, body: String)] {
        [
            (
                "  # BEGIN cluster services: written by `swarmdeckd deploy write` from the registry; do not edit",
                "  # END cluster services",
                services.map { "  \($0.name): *cluster-service\n" }.joined()
            ),
            (
                "      # BEGIN cluster postgres passwords: written by `swarmdeckd deploy write` from the registry; do not edit",
                "      # END cluster postgres passwords",
                Self.passwordSecrets(["postgres"] + services.map { $0.name })
            ),
            (
                "      # BEGIN cluster pooler passwords: written by `swarmdeckd deploy write` from the registry; do not edit",
                "      # END cluster pooler passwords",
                Self.passwordSecrets(services.map { $0.name })
            ),
        ]
    }

    /// A compose service's `secrets:` items for the Postgres passwords of `names`.
    static func passwordSecrets(_ names: [String]) -> String {
        names.map { "      - pg-\($0)-password\n" }.joined()
    }
}
