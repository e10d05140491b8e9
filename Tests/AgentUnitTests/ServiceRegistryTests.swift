import Contracts
import Foundation
import ServiceKit
import SwarmdeckServices
import TestSupport
import Testing

@Suite("The registry of services is what deployment runs")
struct ServiceRegistryTests {
    static let root = TestEnvironment.repositoryRoot

    static func text(_ path: String) throws -> String {
        try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test(
        "what deployment reads from the registry is committed as it writes it (swarmdeckd deploy write)",
        arguments: try DeploymentFiles.all().map(\.path)
    )
    func deploymentFile(path: String) throws {
        let file = try #require(try DeploymentFiles.all().first { $0.path == path })
        let text = try Self.text(path)
        #expect(try file.render(text) == text, "\(path) is out of date: run swift run swarmdeckd deploy write")
    }

    @Test("deploy/local/services lists the registry's services in its order, each on its default port + 1020, with its edge routes")
    func localServices() throws {
        let lines = DeploymentFiles.localServices(ServiceRegistry.all).split(separator: "\n").filter { !$0.hasPrefix("#") }
        let rows = lines.map { $0.split(separator: " ").map(String.init) }
        #expect(rows.map { $0[0] } == ServiceRegistry.all.map { $0.name })
        #expect(rows.map { Int($0[1]) } == ServiceRegistry.all.map { $0.defaultPort + 1020 })
        #expect(rows.map { Array($0.dropFirst(2)) } == ServiceRegistry.all.map { $0.edgeRoutes })
    }

    @Test("every service's Postgres role owns a schema of its own, and only the event log's readers are ingest_reader's members")
    func postgresRoles() throws {
        let schemas = ServiceRegistry.all.map { $0.defaultSchema }
        #expect(!schemas.contains(nil) && Set(schemas).count == schemas.count, "\(schemas)")
        let sql = try DeploymentFiles.postgresRoles(ServiceRegistry.all)
        for service in ServiceRegistry.all {
            #expect(sql.contains("CREATE SCHEMA IF NOT EXISTS \(service.defaultSchema ?? "") AUTHORIZATION \(service.postgresRole);\n"))
            #expect(sql.contains("ALTER ROLE \(service.postgresRole) LOGIN PASSWORD :'\(service.postgresRole)_pw';\n"))
        }
        let readers = ServiceRegistry.all.filter { $0.readsEventLog }.map { $0.postgresRole }
        #expect(readers == ["stream_fanout", "control_api", "health_monitor"])
        #expect(sql.contains("GRANT ingest_reader TO \(readers.joined(separator: ", "));\n"))
    }

    @Test("each role carries its service's session at the default settings (postgres.role-settings), as the service computes it")
    func roleSettings() async throws {
        // The keys that have no default (files are read, not parsed, when settings are).
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("role-settings-\(UUID().uuidString)")
        try Data("not read further".utf8).write(to: file)
        // terminal-broker's is parsed: an OpenSSH key.
        let sshKey = file.path + "-ssh"
        let keygen = Process()
        keygen.executableURL = URL(fileURLWithPath: "/usr/bin/ssh-keygen")
        keygen.arguments = ["-q", "-t", "ed25519", "-N", "", "-f", sshKey]
        try keygen.run()
        keygen.waitUntilExit()
        defer {
            for path in [file.path, sshKey, sshKey + ".pub"] { try? FileManager.default.removeItem(atPath: path) }
        }
        let required = [
            "AUTH_JWT_PRIVATE_KEY_FILE": file.path, "NOTIFIER_APNS_KEY_FILE": file.path, "NOTIFIER_APNS_KEY_ID": "ABCDEFGHIJ",
            "NOTIFIER_APNS_TEAM_ID": "ABCDEFGHIJ", "TERMINAL_SSH_KEY_FILE": sshKey,
        ]
        func session<Service: SwarmdeckService>(_ service: Service.Type) async throws -> PostgresSession {
            Service.postgresSession(
                try await Service.Settings(reader: ServiceConfiguration.reader(arguments: [Service.name], environment: required))
            )
        }
        let sql = try DeploymentFiles.postgresRoles(ServiceRegistry.all)
        for service in ServiceRegistry.all {
            let computed = try await session(service)
            #expect(
                service.defaultPostgresSession == computed,
                "\(service.name): \(String(describing: service.defaultPostgresSession)) ≠ \(computed)"
            )
            let statements = computed.roleSQL(role: service.postgresRole)
            #expect(!statements.isEmpty && sql.contains(statements + "\n"), "\(service.name)")
        }
    }

    @Test("every service's NATS user hears revocations and its own inboxes only, and takes its variable in nats-permissions.conf")
    func natsPermissions() throws {
        let subjects = try Subjects()
        let text = try DeploymentFiles.natsPermissions(ServiceRegistry.all, prefix: Subjects.defaultPrefix)
        for service in ServiceRegistry.all {
            let permissions = service.allNATSPermissions(subjects)
            #expect(permissions.subscribe.contains(subjects.allRevocations))
            let inboxes = permissions.subscribe.filter { $0.hasPrefix("_INBOX") }
            #expect(inboxes == ["_INBOX.\(service.name).>"], "\(service.name): \(inboxes)")
            #expect(text.contains("\n\(DeploymentFiles.natsPermissionsVariable(service.name)) = {\n"))
        }
        // What docs/staging.md promises, checked with NATS's wildcards: only control-api announces
        // revocations or reaches the JetStream API at large (deleting a stream it owns none of);
        // only control-api and approvals publish commands; only ingest publishes the live feed.
        let promises: [(subject: String, allowed: Set<String>)] = [
            (subjects.revocation(tenant: "t"), ["control-api"]),
            (JetStreamOperation.streamDelete(stream: subjects.controlStreamName).subject(), ["control-api"]),
            (JetStreamOperation.streamCreate(stream: subjects.controlStreamName).subject(), ["control-api"]),
            (subjects.controlCommand(tenant: "t", swarm: "s", agent: "a"), ["control-api", "approvals"]),
            (subjects.eventBatch(tenant: "t"), ["ingest"]),
            (subjects.event(tenant: "t", swarm: "s", agent: "a", kind: .acp), ["ingest"]),
        ]
        for (subject, allowed) in promises {
            let publishers = ServiceRegistry.all.filter { service in
                service.allNATSPermissions(subjects).publish.contains { Self.covers($0, subject) }
            }
            #expect(Set(publishers.map { $0.name }) == allowed, "\(subject): \(publishers.map { $0.name })")
        }
    }

    @Test("docker-compose.yml runs each service as swarmdeckd <name>, and nothing else through swarmdeckd")
    func compose() throws {
        let commands = try Self.text("docker-compose.yml").split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: #"command: ["swarmdeckd", ""#) else { return nil }
            return String(line[range.upperBound...].prefix { $0 != "\"" })
        }
        #expect(commands == ServiceRegistry.all.map { $0.name })
    }

    /// Whether the NATS subject pattern `pattern` (`*` one token, `>` the rest) covers `subject`.
    static func covers(_ pattern: String, _ subject: String) -> Bool {
        let patterns = pattern.split(separator: ".", omittingEmptySubsequences: false)
        let tokens = subject.split(separator: ".", omittingEmptySubsequences: false)
        for (index, token) in patterns.enumerated() {
            if token == ">" { return tokens.count > index }
            guard index < tokens.count, token == "*" || token == tokens[index] else { return false }
        }
        return patterns.count == tokens.count
    }

    @Test("the wildcard matcher the permissions' test uses reads NATS's wildcards")
    func wildcards() {
        #expect(Self.covers("sd.>", "sd.revoked.t") && Self.covers("sd.revoked.*", "sd.revoked.t") && Self.covers(">", "a"))
        #expect(!Self.covers("sd.revoked.*", "sd.revoked.t.x") && !Self.covers("sd.>", "sd") && !Self.covers("sd.ev", "sd.ev.t"))
    }

    /// The lines of `service`'s block in a compose file: from `  <name>:` to the next line
    /// indented two spaces or less.
    static func block(_ service: any SwarmdeckService.Type, in lines: [String]) throws -> ArraySlice<String> {
        let start = try #require(lines.firstIndex(of: "  \(service.name):"), "\(service.name) has no block")
        return lines[(start + 1)...].prefix { $0.isEmpty || $0.hasPrefix("   ") }
    }

    /// What the registry says of a service's compose block: it runs as `swarmdeckd <name>`,
    /// mounts its own Postgres and NATS credentials and no other service's, and waits for
    /// ingest when it reads the event log.
    static func checkBlocks(_ compose: String) throws {
        let lines = compose.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for service in ServiceRegistry.all {
            let block = try Self.block(service, in: lines)
            #expect(block.contains("    command: [\"swarmdeckd\", \"\(service.name)\"]"), "\(service.name)")
            let credentials = block.compactMap { line -> String? in
                guard let range = line.range(of: "- source: ") else { return nil }
                let source = String(line[range.upperBound...])
                return source.hasSuffix("_postgres_url") || source.hasSuffix("_nats_url") ? source : nil
            }
            #expect(
                credentials.sorted() == ["\(service.postgresRole)_nats_url", "\(service.postgresRole)_postgres_url"],
                "\(service.name): \(credentials)"
            )
            if service.readsEventLog {
                #expect(block.contains("      ingest:"), "\(service.name) reads the event log but does not wait for ingest")
            }
        }
    }

    @Test("each service's block in docker-compose.yml runs it, mounts its own credentials and no other's, and waits for ingest when it reads the log")
    func composeBlocks() throws {
        try Self.checkBlocks(try Self.text("docker-compose.yml"))
    }

    @Test("without the marker line, a compose file with every block is left as it is; one missing a block is refused, naming it")
    func composeWithoutMarker() throws {
        let compose = try Self.text("docker-compose.yml")
        let unmarked = compose.replacingOccurrences(of: DeploymentFiles.newBlocksMarker + "\n", with: "")
        #expect(unmarked != compose)
        #expect(try DeploymentFiles.composeAddingBlocks(unmarked, ServiceRegistry.all) == unmarked)
        // A volume named like a service is not its block.
        let renamed = unmarked.replacingOccurrences(of: "\n  notifier:\n", with: "\n  notifier-old:\n") + "\n  notifier:\n    driver: local\n"
        #expect {
            try DeploymentFiles.composeAddingBlocks(renamed, ServiceRegistry.all)
        } throws: { error in
            "\(error)".contains("no block for notifier")
        }
    }

    @Test(
        "a service without a block in docker-compose.yml gets one from the registry, once",
        arguments: ["health-monitor", "control-api", "terminal-broker"]
    )
    func composeNewBlock(name: String) throws {
        let service = try #require(ServiceRegistry.all.first { $0.name == name })
        var lines = try Self.text("docker-compose.yml").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex(of: "  \(name):"))
        let end = start + 1 + (try Self.block(service, in: lines)).count
        lines.removeSubrange(start..<end)
        let added = try DeploymentFiles.composeAddingBlocks(lines.joined(separator: "\n"), ServiceRegistry.all)
        try Self.checkBlocks(added)
        #expect(try DeploymentFiles.composeAddingBlocks(added, ServiceRegistry.all) == added)
        let block = try Self.block(service, in: added.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
        let text = block.joined(separator: "\n")
        #expect(text.contains("<<: *service") && text.contains("<<: *environment") && text.contains("source: jwt_public_key"))
        for key in service.settingsKeys where key.name.hasSuffix(".trusted-proxies") || key.name.hasSuffix(".web-base-url") {
            #expect(text.contains("      \(key.environmentName): "), "\(name): \(key.name)")
        }
        #expect(text.contains("source: jwt_private_key") == (name == "control-api"))
        // A key it cannot start without and the block cannot know is named above the block.
        let required = service.settingsKeys.filter { $0.defaultValue == nil && !$0.isOptional && $0.name != "auth.jwt.private-key-file" }
        for key in required {
            #expect(added.contains("its environment sets") && added.contains(key.environmentName), "\(name): \(key.name)")
        }
        #expect(name != "terminal-broker" || !required.isEmpty)
    }

    @Test("the names are unique, no service is named as a command of swarmdeckd, and the default ports are unique")
    func unique() {
        let commands = Set(["list", "help", "--help", "-h"] + SwarmdeckdTools.all.map(\.name))
        #expect(commands.isDisjoint(with: ServiceRegistry.all.map { $0.name }))
        #expect(Set(ServiceRegistry.all.map { $0.name }).count == ServiceRegistry.all.count)
        #expect(Set(ServiceRegistry.all.map { $0.defaultPort }).count == ServiceRegistry.all.count)
    }
}

@Suite("swarmdeckd: one executable, any service")
struct SwarmdeckdTests {
    /// Runs swarmdeckd with `arguments`; its status, standard output and standard error.
    static func run(_ arguments: [String]) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = Swarmdeckd.url
        process.arguments = arguments
        process.environment = [:]
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    @Test("list names every registered service with its default port")
    func list() throws {
        let (status, output, _) = try Self.run(["list"])
        #expect(status == 0)
        #expect(output == ServiceRegistry.all.map { "\($0.name) \($0.defaultPort)\n" }.joined())
    }

    @Test("an unknown or missing service name: status 64 and the usage, naming every service", arguments: [["bogus"], [], ["--nats-url"]])
    func usage(arguments: [String]) throws {
        let (status, output, error) = try Self.run(arguments)
        #expect(status == 64 && output.isEmpty)
        #expect(error.contains("usage: ") && ServiceRegistry.all.allSatisfy { error.contains($0.name) }, "\(error)")
    }

    @Test("a service's flags follow its name and are its configuration: a malformed one stops it with status 78, naming the key")
    func flags() throws {
        let (status, _, error) = try Self.run(["ingest", "--log-level", "loud"])
        #expect(status == 78)
        #expect(error.hasPrefix("swarmdeckd ingest: malformed configuration key 'log.level'"), "\(error)")
        let (missing, _, why) = try Self.run(["notifier", "--log-level", "info"])
        #expect(missing == 78 && why.contains("missing configuration key 'notifier.apns.key-file'"), "\(why)")
        // ServiceKit's keys and the service's, in one message.
        #expect(why.contains("missing configuration key 'nats.url'") && why.contains("'auth.jwt.public-key-file'"), "\(why)")
    }

    @Test("--help prints the usage and succeeds")
    func help() throws {
        let (status, output, _) = try Self.run(["--help"])
        #expect(status == 0 && output.hasPrefix("usage: swarmdeckd (ingest | "))
        let (serviceStatus, serviceOutput, _) = try Self.run(["notifier", "--log-level", "info", "--help"])
        #expect(serviceStatus == 0 && serviceOutput.contains("swarmdeckd config keys --service notifier"), "\(serviceOutput)")
        let (unknown, _, _) = try Self.run(["bogus", "--help"])
        #expect(unknown == 64)
    }

    /// A file of the repository (what deploy write must reproduce).
    static func repositoryText(_ path: String) throws -> String {
        try ServiceRegistryTests.text(path)
    }

    @Test("config and deploy describe the services from the registry; a bad argument fails with the command's usage")
    func tools() throws {
        let (keysStatus, keys, _) = try Self.run(["config", "keys", "--service", "approvals"])
        #expect(keysStatus == 0 && keys.contains("## approvals (default port 8084)") && !keys.contains("## notifier"), "\(keys)")
        let (printStatus, services, _) = try Self.run(["deploy", "print", "services"])
        #expect(printStatus == 0 && services == DeploymentFiles.localServices(ServiceRegistry.all))
        let (prefixStatus, permissions, _) = try Self.run(["deploy", "print", "nats-permissions", "--prefix", "t.a1"])
        let expected = try DeploymentFiles.natsPermissions(ServiceRegistry.all, prefix: "t.a1")
        #expect(prefixStatus == 0 && permissions == expected)
        let (badPrefix, _, why) = try Self.run(["deploy", "print", "nats-permissions", "--prefix", "sd.>"])
        #expect(badPrefix != 0 && why.contains("subject prefix"), "\(why)")
        let (badService, _, _) = try Self.run(["config", "keys", "--service", "bogus"])
        #expect(badService != 0)
        let (helpStatus, help, _) = try Self.run(["help", "deploy"])
        #expect(helpStatus == 0 && help.contains("swarmdeckd deploy") && help.contains("write"), "\(help)")
    }

    @Test("deploy write --check changes nothing and fails naming each file out of date; deploy write writes them")
    func deployWrite() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("swarmdeckd-\(UInt64.random(in: 0...UInt64.max))")
        defer { try? FileManager.default.removeItem(at: root) }
        for folder in ["deploy/local", "deploy/staging/cluster"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        // A compose file whose written sections are empty; it is a hand-written file, so without it deploy write fails.
        let (missingStatus, _, missing) = try Self.run(["deploy", "write", "--check", "--root", root.path])
        #expect(missingStatus != 0 && missing.contains("docker-compose.yml is missing"), "\(missing)")
        var compose = try ServiceRegistryTests.text("docker-compose.yml")
        for section in DeploymentFiles.composeSections(ServiceRegistry.all) {
            compose = try #require(compose.replacingSection(between: section.begin, and: section.end, with: ""))
        }
        try compose.write(to: root.appendingPathComponent("docker-compose.yml"), atomically: true, encoding: .utf8)
        // The cluster compose, hand-written too, with its written sections empty.
        var cluster = try ServiceRegistryTests.text("deploy/staging/cluster/compose.yml")
        for section in DeploymentFiles.clusterComposeSections(ServiceRegistry.all) {
            cluster = try #require(cluster.replacingSection(between: section.begin, and: section.end, with: ""))
        }
        try cluster.write(to: root.appendingPathComponent("deploy/staging/cluster/compose.yml"), atomically: true, encoding: .utf8)
        let (checkStatus, _, stale) = try Self.run(["deploy", "write", "--check", "--root", root.path])
        let paths = try DeploymentFiles.all().map(\.path)
        #expect(checkStatus != 0 && paths.allSatisfy { stale.contains($0) }, "\(stale)")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("deploy/local/services").path))
        let (writeStatus, _, _) = try Self.run(["deploy", "write", "--root", root.path])
        #expect(writeStatus == 0)
        for path in paths {
            #expect(try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8) == (try Self.repositoryText(path)), "\(path)")
        }
        let (againStatus, again, _) = try Self.run(["deploy", "write", "--check", "--root", root.path])
        #expect(againStatus == 0 && again.contains("up to date"))
    }
}
