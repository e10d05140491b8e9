public import Configuration
import Foundation
public import Hummingbird
import Logging
import PostgresNIO
import ServiceLifecycle

/// Runs a ``SwarmdeckService``: the start-up every service shares, written once.
///
/// In order: the configuration (command line, environment, `CONFIG_SECRETS_DIR`,
/// `CONFIG_FILE`); ServiceKit's settings and the service's, read together (the key files among
/// them); JSON logging; the Postgres client with the service's session limits; NATS; the
/// access-token verifier; a router with the shared middleware and `/healthz`, `/readyz` and
/// `/metrics`; the service's assemble step; then one `ServiceGroup` (Postgres, NATS, the
/// service's own services, the HTTP server) that applies the migrations and the service's
/// start-up work before the server accepts requests, and shuts down gracefully on SIGTERM or
/// SIGINT (the server stops taking requests, then the services drain, NATS last).
public enum ServiceMain {
    /// Runs `service` until it is told to stop, configured from `arguments` (flags), the
    /// environment and the files they name.
    public static func run<Service: SwarmdeckService>(
        _ service: Service.Type,
        arguments: [String] = CommandLine.arguments
    ) async throws {
        let reader = try await ServiceConfiguration.reader(arguments: arguments, environment: ProcessInfo.processInfo.environment)
        let settings = try service.settings(reader: reader)
        JSONLogHandler.bootstrap(level: settings.common.logLevel)
        try await service.application(reader: reader, settings: settings).runService()
    }

    /// `swarmdeckd`'s entry point: `swarmdeckd NAME [--key value…]` runs the service of
    /// `services` named `NAME` (its flags are its configuration, as `--nats-url`; a missing or
    /// malformed key exits with status 78 and a message naming it); `swarmdeckd TOOL …` runs the
    /// tool of `tools` named `TOOL` with the arguments after it (`swarmdeckd help TOOL …`: its
    /// help); `swarmdeckd list` prints each
    /// service's name and default port; `--help` the usage (after a service's name too, where it
    /// also says where its keys are listed). Anything else exits with status 64 and the usage.
    /// A service that stops on any other error says it in one line and exits with status 1.
    public static func main(
        services: [any SwarmdeckService.Type],
        tools: [ServiceTool] = [],
        arguments: [String] = CommandLine.arguments
    ) async throws {
        let program = arguments.first.map { ($0 as NSString).lastPathComponent } ?? "swarmdeckd"
        let names = services.map { $0.name }
        let usage =
            "usage: \(program) (\(names.joined(separator: " | "))) [--key value…]\n       \(program) list\n"
            + tools.map { "       \(program) \($0.name) …    \($0.summary)\n" }.joined()
        let first = arguments.dropFirst().first
        // A tool, named first or after `help` (`swarmdeckd help deploy write`: its help).
        let helping = first == "help"
        if let tool = tools.first(where: { $0.name == (helping ? arguments.dropFirst(2).first : first) }) {
            let rest = Array(arguments.dropFirst(helping ? 3 : 2))
            try await tool.run(helping ? rest + ["--help"] : rest)
            return
        }
        switch (first, services.first { $0.name == first }) {
        case ("list", _):
            for service in services { print("\(service.name) \(service.defaultPort)") }
        case ("--help", _), ("-h", _), ("help", _):
            print(usage, terminator: "")
        case (let name?, _?) where arguments.dropFirst(2).contains(where: { $0 == "--help" || $0 == "-h" }):
            print("\(usage)the keys of \(name), with their flags: \(program) config keys --service \(name)")
        case (let name?, let service?):
            do {
                // The service's flags follow its name; the configuration reads them as a command line of their own.
                try await Self.run(service, arguments: [arguments.first ?? program] + arguments.dropFirst(2))
            } catch let error as ServiceKitError where error.code == .configuration {
                FileHandle.standardError.write(Data("\(program) \(name): \(error.message)\n".utf8))
                exit(78)
            } catch {
                // Anything else that stops it (a key that does not parse, a migration that
                // fails): said in one line and status 1, not a crash's backtrace.
                let message = (error as? ServiceKitError)?.message ?? String(reflecting: error)
                FileHandle.standardError.write(Data("\(program) \(name): \(message)\n".utf8))
                exit(1)
            }
        case (let other, _):
            let problem = other.map { "unknown service '\($0)'" } ?? "no service named"
            FileHandle.standardError.write(Data("\(program): \(problem)\n\(usage)".utf8))
            exit(64)
        }
    }
}

extension SwarmdeckService {
    /// ServiceKit's settings and the service's own, read together: every missing or malformed
    /// key of both is reported at once.
    public static func settings(reader: ConfigReader) throws(ServiceKitError) -> (common: ServiceKitSettings, own: Settings) {
        let common = Result { () throws(ServiceKitError) in try ServiceKitSettings(reader: reader) }
        let own = Result { () throws(ServiceKitError) in try Settings(reader: reader) }
        switch (common, own) {
        case (.success(let common), .success(let own)):
            return (common, own)
        case (.failure(let first), .failure(let second)):
            throw ServiceKitError(.configuration, first.message + "; " + second.message)
        case (.failure(let error), _), (_, .failure(let error)):
            throw error
        }
    }

    /// The service as a Hummingbird application, built from `reader`: what ``ServiceMain``
    /// runs, and what tests run in process.
    public static func application(reader: ConfigReader) async throws -> some ApplicationProtocol {
        try await Self.application(reader: reader, settings: try Self.settings(reader: reader))
    }

    /// The service as a Hummingbird application, from `reader` and the settings already read
    /// from it (``settings(reader:)``).
    static func application(
        reader: ConfigReader,
        settings read: (common: ServiceKitSettings, own: Settings)
    ) async throws -> some ApplicationProtocol {
        let (common, settings) = read
        var logger = Logger(label: Self.name)
        logger.logLevel = common.logLevel
        let migrator = try Migrator(schema: settings.schema, migrations: Self.migrations)

        // Named in pg_stat_activity after the service and the schema it owns.
        var session = Self.postgresSession(settings)
        session.applicationName = session.applicationName ?? "\(Self.name)/\(settings.schema)"
        var postgresConfiguration = common.postgresConfiguration()
        session.apply(to: &postgresConfiguration, roleSettings: common.postgresRoleSettings)
        let postgres = PostgresClient(configuration: postgresConfiguration, backgroundLogger: logger)
        var credentialConfiguration = common.credentialPostgresConfiguration()
        session.apply(to: &credentialConfiguration, roleSettings: common.postgresRoleSettings)
        let credentialPostgres = PostgresClient(configuration: credentialConfiguration, backgroundLogger: logger)
        let nats = try await NATSConnection.connect(common.natsConfiguration(name: Self.name, sendAsap: Self.natsSendAsap))

        let subjects = common.subjects
        let revocations = RevocationList()
        let revocationFeed = RevocationFeed(connection: nats, subjects: subjects, list: revocations, logger: logger)
        let readiness = ReadinessChecks([.nats(nats), .postgres(postgres), ReadinessCheck(name: "revocations") { revocations.isLoaded }])
        let router = Router.service()
        router.addOperationalRoutes(readiness: readiness)
        let parts = try await Self.assemble(
            ServiceAssembly(
                reader: reader,
                settings: settings,
                common: common,
                logger: logger,
                postgres: postgres,
                credentialPostgres: credentialPostgres,
                nats: nats,
                subjects: subjects,
                verifier: try await common.accessTokenVerifier(revocations: revocations),
                revocations: revocations,
                router: router
            )
        )
        readiness.append(parts.readiness)

        // The service's own services wait for its schema and its start-up work.
        let own = AfterStartUp.wrapping(parts.services)
        var application = Application(
            router: router,
            server: parts.server,
            configuration: common.applicationConfiguration(serverName: Self.name, defaultPort: Self.defaultPort),
            services: [postgres, credentialPostgres, NATSService(connection: nats), revocationFeed] + own.services,
            logger: logger
        )
        application.beforeServerStarts { [logger, session] in
            if common.postgresRoleSettings, let problem = try await session.roleSettingsProblem(postgres, logger: logger) {
                throw ServiceKitError(.configuration, problem)
            }
            try await migrator.migrate(postgres, logger: logger)
            for work in parts.beforeServerStarts {
                try await work()
            }
            for service in own.waiting { service.begin() }
        }
        return application
    }
}
