import Configuration
import Foundation
import ServiceKit
import Testing

@Suite("Configuration")
struct ConfigurationTests {
    private func reader(_ environment: [String: String], arguments: [String] = ["service"]) async throws -> ConfigReader {
        try await ServiceConfiguration.reader(arguments: arguments, environment: environment)
    }

    /// A readable file for `auth.jwt.public-key-file` (its content is not checked until the verifier is made).
    private static let keyFile = #filePath

    @Test("a missing required key fails with a message naming the key, its variable and its flag, and every other missing one")
    func missingKey() async throws {
        let reader = try await self.reader([:])
        let error = try #require(throws: ServiceKitError.self) { try ServiceKitSettings(reader: reader) }
        #expect(error.code == .configuration)
        #expect(error.message.contains("'nats.url'"))
        #expect(error.message.contains("NATS_URL"))
        #expect(error.message.contains("--nats-url"))
        #expect(error.message.contains("'postgres.url'") && error.message.contains("'auth.jwt.public-key-file'"), "\(error.message)")
    }

    @Test(
        "a malformed key fails with a message naming the key",
        arguments: [
            ("HTTP_PORT", "eighty", "'http.port'"),
            ("HTTP_PORT", "70000", "'http.port'"),
            ("NATS_URL", "http://x", "'nats.url'"),
            ("POSTGRES_MAX_CONNECTIONS", "0", "'postgres.max-connections'"),
            ("LOG_LEVEL", "loud", "'log.level'"),
            ("SUBJECTS_PREFIX", "a.*", "'subjects.prefix'"),
            ("POSTGRES_URL", "mysql://u@h/db", "'postgres.url'"),
        ]
    )
    func malformedKey(variable: String, value: String, named: String) async throws {
        var environment = [
            "NATS_URL": "nats://127.0.0.1:4222", "POSTGRES_URL": "postgres://u:p@127.0.0.1/db", "AUTH_JWT_PUBLIC_KEY_FILE": Self.keyFile,
        ]
        environment[variable] = value
        let reader = try await self.reader(environment)
        let error = try #require(throws: ServiceKitError.self) { try ServiceKitSettings(reader: reader) }
        #expect(error.code == .configuration)
        #expect(error.message.contains(named), "\(error.message)")
        #expect(error.message.contains("malformed"))
    }

    @Test("a secret value is never echoed in an error")
    func secretNotEchoed() async throws {
        let reader = try await self.reader(["POSTGRES_URL": "postgres://user:hunter2@/db"])
        let error = try #require(throws: ServiceKitError.self) { try ServiceKitSettings(reader: reader) }
        #expect(error.message.contains("'postgres.url'") && !error.message.contains("hunter2"), "\(error.message)")
    }

    @Test("the command line wins over the environment; defaults fill the rest")
    func precedence() async throws {
        let reader = try await self.reader(
            [
                "NATS_URL": "nats://env:4222", "HTTP_PORT": "9000", "POSTGRES_URL": "postgres://u:p@127.0.0.1/db",
                "AUTH_JWT_PUBLIC_KEY_FILE": Self.keyFile,
            ],
            arguments: ["service", "--nats-url", "nats://flag:4222"]
        )
        let settings = try ServiceKitSettings(reader: reader)
        #expect(settings.natsConfiguration(name: "t").servers == ["nats://flag:4222"])
        #expect(settings.logLevel == .info)
        #expect(settings.subjects.prefix == "sd")
        #expect(settings.httpPort == 9000 && settings.httpHost == "127.0.0.1")
    }

    @Test("a secrets directory gives one key per file, below the environment, and a missing one fails")
    func secretsDirectory() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secrets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "postgres://ingest:s3cret@postgres:5432/swarmdeck\n".write(
            to: directory.appendingPathComponent("postgres-url"),
            atomically: true,
            encoding: .utf8
        )
        try "nats://ingest:pw@nats:4222".write(to: directory.appendingPathComponent("nats-url"), atomically: true, encoding: .utf8)

        let reader = try await self.reader([
            "CONFIG_SECRETS_DIR": directory.path, "NATS_URL": "nats://env:4222", "AUTH_JWT_PUBLIC_KEY_FILE": Self.keyFile,
        ])
        let settings = try ServiceKitSettings(reader: reader)
        let postgres = settings.postgresConfiguration()
        #expect(postgres.username == "ingest")
        #expect(postgres.password == "s3cret")
        #expect(settings.natsConfiguration(name: "t").servers == ["nats://env:4222"])

        let missing = await #expect(throws: ServiceKitError.self) {
            _ = try await self.reader(["CONFIG_SECRETS_DIR": directory.appendingPathComponent("absent").path])
        }
        #expect(missing?.message.contains("CONFIG_SECRETS_DIR") == true)
    }

    @Test("every documented key maps to an environment variable and a flag")
    func documentedKeys() {
        for key in ServiceConfiguration.keys {
            #expect(!key.summary.isEmpty)
            #expect(key.environmentName.allSatisfy { $0.isUppercase || $0 == "_" || $0.isNumber })
            #expect(key.flag.hasPrefix("--") && !key.flag.contains("."))
        }
    }
}
