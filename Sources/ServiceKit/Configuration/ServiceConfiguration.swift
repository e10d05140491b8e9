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
    /// The keys ServiceKit reads for every service: where the configuration comes from, then
    /// ``ServiceKitSettings``' keys.
    public static var keys: [SettingKey] {
        [SettingKey.configFile, .configSecretsDir] + ServiceKitSettings.keys
    }

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
}
