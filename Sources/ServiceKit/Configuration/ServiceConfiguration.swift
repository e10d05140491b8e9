public import Configuration
import SystemPackage

/// Builds the configuration reader every service uses: command line, then environment, then the
/// files of the directory named by `CONFIG_SECRETS_DIR` (if set), then the JSON file named by
/// `CONFIG_FILE` (if set), first match wins.
///
/// The secrets directory is how containers get credentials without putting them in the
/// environment (`docker inspect` shows it) or an image: each file is one key, named by the key
/// with dashes for dots (`postgres-url` holds `postgres.url`), its content trimmed; compose
/// mounts secrets that way, at `/run/secrets`. Only regular files count (swift-configuration
/// skips symbolic links and hidden names): a Kubernetes secret volume, whose keys are symbolic
/// links, needs each key mounted with `subPath`. Every value read from it is a secret (never
/// printed).
public enum ServiceConfiguration {
    /// The keys ServiceKit reads for every service.
    public static let keys: [SettingKey] = [
        SettingKey.configFile, .configSecretsDir,
        .httpHost, .httpPort, .logLevel, .natsURL, .postgresURL, .postgresMaxConnections, .postgresCredentialConnections,
        .subjectsPrefix, .jwtIssuer, .jwtAudience, .jwtPublicKeyFile, .jwtKeyID,
    ]

    public static func reader(
        arguments: [String] = CommandLine.arguments,
        environment: [String: String]
    ) async throws -> ConfigReader {
        let commandLine = CommandLineArgumentsProvider(arguments: arguments)
        let environmentProvider = EnvironmentVariablesProvider(environmentVariables: environment)
        var providers: [any ConfigProvider] = [commandLine, environmentProvider]
        let bootstrap = ConfigReader(providers: providers)
        if let path = bootstrap.string(forKey: SettingKey.configSecretsDir.configKey) {
            do {
                providers.append(try await DirectoryFilesProvider(directoryPath: FilePath(path)))
            } catch {
                throw ServiceKitError(.configuration, "cannot read the secrets directory \(path) named by \(SettingKey.configSecretsDir): \(error)")
            }
        }
        if let path = bootstrap.string(forKey: SettingKey.configFile.configKey) {
            do {
                providers.append(try await FileProvider<JSONSnapshot>(filePath: FilePath(path)))
            } catch {
                throw ServiceKitError(.configuration, "cannot read configuration file \(path) named by \(SettingKey.configFile): \(error)")
            }
        }
        return ConfigReader(providers: providers)
    }
}

extension SettingKey {
    public static let configFile = SettingKey(
        "config.file",
        "a JSON file with further settings (nested by the dots of the keys)",
        optional: true,
        expected: "a path to a JSON file"
    )
    public static let configSecretsDir = SettingKey(
        "config.secrets-dir",
        "a directory of secret files, one per key (postgres-url holds postgres.url), e.g. /run/secrets",
        optional: true,
        expected: "a path to a directory"
    )
    public static let httpHost = SettingKey(
        "http.host",
        "the address the HTTP server binds",
        default: "127.0.0.1",
        expected: "a host name or address"
    )
    public static let httpPort = SettingKey(
        "http.port",
        "the port the HTTP server binds (each service has its own default)",
        optional: true,
        expected: "an integer in 1...65535"
    )
    public static let logLevel = SettingKey(
        "log.level",
        "trace, debug, info, notice, warning, error or critical",
        default: "info",
        expected: "trace, debug, info, notice, warning, error or critical"
    )
    public static let natsURL = SettingKey(
        "nats.url",
        "NATS server URLs, comma-separated, e.g. nats://127.0.0.1:4222",
        expected: "nats:// or tls:// URLs separated by commas"
    )
    public static let postgresURL = SettingKey(
        "postgres.url",
        "the Postgres connection URL, e.g. postgres://user:password@127.0.0.1:5432/swarmdeck",
        secret: true,
        expected: "a postgres:// URL"
    )
    public static let postgresMaxConnections = SettingKey(
        "postgres.max-connections",
        "the size of the connection pool",
        default: "10",
        expected: "an integer in 1...500"
    )
    public static let postgresCredentialConnections = SettingKey(
        "postgres.credential-connections",
        "the size of the separate pool credential checks use (an ingest key look-up never queues behind event commits)",
        default: "2",
        expected: "an integer in 1...50"
    )
    public static let subjectsPrefix = SettingKey(
        "subjects.prefix",
        "the first token(s) of every NATS subject",
        default: "sd",
        expected: "NATS subject tokens separated by dots"
    )
    public static let jwtIssuer = SettingKey(
        "auth.jwt.issuer",
        "the issuer (iss) access tokens must carry",
        default: "swarmdeck",
        expected: "a non-empty string"
    )
    public static let jwtAudience = SettingKey(
        "auth.jwt.audience",
        "the audience (aud) access tokens must carry",
        default: "swarmdeck",
        expected: "a non-empty string"
    )
    public static let jwtPublicKeyFile = SettingKey(
        "auth.jwt.public-key-file",
        "PEM file with the ES256 public key that verifies access tokens",
        expected: "a readable PEM file"
    )
    public static let jwtKeyID = SettingKey("auth.jwt.key-id", "the key id (kid) of that key", default: "swarmdeck-1", expected: "a non-empty string")
}
