import Configuration
import Foundation
import ServiceKit
import Testing

/// A group several settings types share, with a check across its keys.
private struct WindowSettings: SettingsGroup, Equatable {
    @Setting("min-seconds", "the shortest window", default: 1, in: 1...60)
    var minSeconds: Int
    @Setting("max-seconds", "the longest window", default: 60, in: 1...3600)
    var maxSeconds: Int

    init() {}

    mutating func validate() throws(ServiceKitError) {
        try self.$maxSeconds.check(self.maxSeconds, in: self.minSeconds...3600)
    }
}

/// A service's settings as services declare them: each key once, with its type, default and range.
private struct ExampleSettings: ServiceSettings, Equatable {
    @Setting("example.schema", "the schema", default: "example", .identifier)
    var schema: String
    @Setting("example.share", "a fraction", default: 0.5, in: 0.01...1.0)
    var share: Double
    @Setting("example.enabled", "on or off", default: true)
    var enabled: Bool
    @Setting("example.key-file", "a required secret file", secret: true, .fileContents)
    var keyText: String
    @Setting("example.url", "an optional https URL", .optional(.baseURL(schemes: ["https"])))
    var url: String?
    @Setting("example.export-dir", "empty: off", .optional(.text, emptyIsAbsent: true))
    var exportDirectory: String?
    @Setting(.trustedProxies("example"))
    var trustedProxies: Set<String>
    @SettingGroup("example.window")
    var window: WindowSettings
    /// Derived by validate().
    var validated = false

    init() {}

    /// Reads a required key: had it run when that key failed, its getter would trap.
    mutating func validate() throws(ServiceKitError) {
        self.validated = !self.keyText.isEmpty
    }
}

/// Every kind of typed default, and a group read only when its gate is set.
private struct DefaultsExample: SettingsGroup, Equatable {
    @Setting("d.count", "an integer", default: 1 << 20, in: 0...(1 << 30))
    var count: Int
    @Setting("d.share", "a fraction", default: 0.125, in: 0.0...1.0)
    var share: Double
    @Setting("d.on", "a boolean", default: false)
    var on: Bool
    @Setting("d.url", "a base URL", default: "https://example.com/base", .baseURL)
    var url: String
    @Setting("d.list", "a list", default: ["b", "a", "c"], .list)
    var list: Set<String>
    @Setting("d.note", "optional text", .optional(.text))
    var note: String?
    @SettingGroup("d.sso", enabledBy: "issuer")
    var sso: GatedSettings

    init() {}
}

/// A feature's keys, checked only when it is on.
private struct GatedSettings: SettingsGroup, Equatable {
    @Setting("issuer", "empty: off", default: "", .anyText)
    var issuer: String
    @Setting("client-id", "required while on", .optional(.text))
    var clientID: String?
    @Setting("max-pending", "a bound", default: 10, in: 1...100)
    var maxPending: Int

    init() {}

    mutating func validate() throws(ServiceKitError) {
        guard self.clientID != nil else { throw ServiceKitError(.configuration, "\(self.$clientID) is required with an issuer") }
    }
}

@Suite("Settings: each declared once, read and checked together")
struct SettingTests {
    static let keyFile: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("setting-tests-\(getpid()).pem").path
        _ = FileManager.default.createFile(atPath: path, contents: Data("-----BEGIN KEY-----\n".utf8))
        return path
    }()

    private func read(_ environment: [String: String]) async throws -> ExampleSettings {
        let reader = try await ServiceConfiguration.reader(arguments: ["example"], environment: environment)
        return try ExampleSettings(reader: reader)
    }

    @Test("the keys are listed in declaration order, a group's under its prefix, with typed defaults rendered")
    func keys() {
        let keys = ExampleSettings.keys
        #expect(
            keys.map(\.name) == [
                "example.schema", "example.share", "example.enabled", "example.key-file", "example.url", "example.export-dir",
                "example.trusted-proxies", "example.window.min-seconds", "example.window.max-seconds",
            ]
        )
        #expect(keys.map(\.defaultValue) == ["example", "0.5", "true", nil, nil, nil, "127.0.0.1,::1", "1", "60"])
        #expect(keys.map(\.isOptional) == [false, false, false, false, true, true, false, false, false])
        #expect(keys[3].isSecret && !keys[0].isSecret)
        #expect(keys[1].expected == "a number in 0.01...1.0")
        #expect(keys[7].environmentName == "EXAMPLE_WINDOW_MIN_SECONDS")
    }

    @Test("unset keys take their defaults, set ones their values, and validate() runs after")
    func values() async throws {
        let defaults = try await self.read(["EXAMPLE_KEY_FILE": Self.keyFile])
        #expect(defaults.schema == "example" && defaults.share == 0.5 && defaults.enabled)
        #expect(defaults.keyText == "-----BEGIN KEY-----\n")
        #expect(defaults.url == nil && defaults.exportDirectory == nil)
        #expect(defaults.trustedProxies == ["127.0.0.1", "::1"])
        #expect(defaults.window.minSeconds == 1 && defaults.window.maxSeconds == 60 && defaults.validated)

        let set = try await self.read([
            "EXAMPLE_KEY_FILE": Self.keyFile, "EXAMPLE_SHARE": "0.25", "EXAMPLE_ENABLED": "no", "EXAMPLE_URL": "https://apns.local:8443/",
            "EXAMPLE_EXPORT_DIR": "", "EXAMPLE_TRUSTED_PROXIES": " 10.0.0.1 , *", "EXAMPLE_WINDOW_MIN_SECONDS": "30",
        ])
        #expect(set.share == 0.25 && !set.enabled)
        #expect(set.url == "https://apns.local:8443")
        #expect(set.exportDirectory == nil)
        #expect(set.trustedProxies == ["10.0.0.1", "*"])
        #expect(set.window.minSeconds == 30)
        let exported = try await self.read(["EXAMPLE_KEY_FILE": Self.keyFile, "EXAMPLE_EXPORT_DIR": "/srv/out"])
        #expect(exported.exportDirectory == "/srv/out")
    }

    @Test("every missing or malformed key is named at once, a secret's value never")
    func problems() async throws {
        let error = try await #require(throws: ServiceKitError.self) {
            _ = try await self.read(["EXAMPLE_SHARE": "2", "EXAMPLE_ENABLED": "maybe", "EXAMPLE_URL": "http://apns.local", "EXAMPLE_SCHEMA": "A-B"])
        }
        #expect(error.code == .configuration)
        for named in ["'example.schema'", "'example.share'", "'example.enabled'", "'example.key-file'", "'example.url'"] {
            #expect(error.message.contains(named), "\(named) in \(error.message)")
        }
        #expect(error.message.contains("missing configuration key 'example.key-file'"))
        #expect(error.message.contains("a number in 0.01...1.0"))
        let secret = try await #require(throws: ServiceKitError.self) {
            _ = try await self.read(["EXAMPLE_KEY_FILE": "/nonexistent/hunter2"])
        }
        #expect(secret.message.contains("<secret>") && !secret.message.contains("hunter2"))
    }

    @Test("a group's own check runs when its keys read, and names the key")
    func groupCheck() async throws {
        let error = try await #require(throws: ServiceKitError.self) {
            _ = try await self.read(["EXAMPLE_KEY_FILE": Self.keyFile, "EXAMPLE_WINDOW_MIN_SECONDS": "50", "EXAMPLE_WINDOW_MAX_SECONDS": "40"])
        }
        #expect(error.message.contains("'example.window.max-seconds'") && error.message.contains("50...3600"))
    }

    @Test("a typed default, rendered for the docs and read back from that text, is the declared value")
    func typedDefaults() async throws {
        let reader = try await ServiceConfiguration.reader(arguments: ["example"], environment: [:])
        let read = try DefaultsExample(reader: reader)
        #expect(read == DefaultsExample())
        #expect(read.count == 1 << 20 && read.share == 0.125 && !read.on && read.url == "https://example.com/base")
        #expect(read.list == ["a", "b", "c"] && read.note == nil && read.sso.issuer.isEmpty)
        #expect(DefaultsExample.keys.first { $0.name == "d.list" }?.defaultValue == "a,b,c")
    }

    @Test("a group gated by a key is neither read nor checked while that key is empty, and is both once it is set")
    func gatedGroup() async throws {
        let off = ["D_SSO_MAX_PENDING": "1000"]
        for environment in [off, off.merging(["D_SSO_ISSUER": "  "]) { $1 }] {
            let reader = try await ServiceConfiguration.reader(arguments: ["example"], environment: environment)
            let settings = try DefaultsExample(reader: reader)
            #expect(settings.sso.maxPending == 10 && settings.sso.clientID == nil)
        }
        #expect(DefaultsExample.keys.map(\.name).contains("d.sso.max-pending"))
        let on = try await ServiceConfiguration.reader(arguments: ["example"], environment: off.merging(["D_SSO_ISSUER": "x"]) { $1 })
        let malformed = try #require(throws: ServiceKitError.self) { try DefaultsExample(reader: on) }
        #expect(malformed.message.contains("'d.sso.max-pending'"))
        let incomplete = try await ServiceConfiguration.reader(arguments: ["example"], environment: ["D_SSO_ISSUER": "x"])
        let missing = try #require(throws: ServiceKitError.self) { try DefaultsExample(reader: incomplete) }
        #expect(missing.message.contains("'d.sso.client-id'") && missing.message.contains("required with an issuer"))
        let complete = try await ServiceConfiguration.reader(
            arguments: ["example"],
            environment: ["D_SSO_ISSUER": "x", "D_SSO_CLIENT_ID": "c", "D_SSO_MAX_PENDING": "5"]
        )
        let settings = try DefaultsExample(reader: complete)
        #expect(settings.sso.issuer == "x" && settings.sso.clientID == "c" && settings.sso.maxPending == 5)
    }

    @Test("a default is the declared value itself: rendered, it reads back to it")
    func defaultsReadBack() async throws {
        let reader = try await ServiceConfiguration.reader(arguments: ["example"], environment: ["EXAMPLE_KEY_FILE": Self.keyFile])
        for key in ExampleSettings.keys {
            guard let text = key.defaultValue else { continue }
            let configured = try await ServiceConfiguration.reader(
                arguments: ["example"],
                environment: ["EXAMPLE_KEY_FILE": Self.keyFile, key.environmentName: text]
            )
            let fromDefault = try ExampleSettings(reader: reader)
            let fromText = try ExampleSettings(reader: configured)
            #expect(fromDefault == fromText, "\(key.name)")
        }
    }

    @Test("the configuration tables are written between their markers and nowhere else")
    func docsTable() throws {
        let page = "# Page\n\nbefore\n\n\(ConfigurationDocs.begin)\n| stale |\n\(ConfigurationDocs.end)\n\nafter\n"
        let written = try #require(ConfigurationDocs.rewritten(page, keys: ExampleSettings.keys))
        #expect(written.hasPrefix("# Page\n\nbefore\n\n\(ConfigurationDocs.begin)\n| key | environment | default | accepts | meaning |\n"))
        #expect(written.hasSuffix("\(ConfigurationDocs.end)\n\nafter\n"))
        #expect(
            written.contains(
                "| `example.key-file` | `EXAMPLE_KEY_FILE` | required (secret: never printed) | a readable file | a required secret file |"
            )
        )
        #expect(ConfigurationDocs.rewritten(written, keys: ExampleSettings.keys) == written)
        #expect(ConfigurationDocs.rewritten("no markers", keys: []) == nil)
        #expect(ConfigurationDocs.rewritten(page + ConfigurationDocs.end + "\n", keys: []) == nil)
    }

    @Test("a refusal says what is wrong when the format knows, never the secret; a secret setting prints without its value")
    func reasonsAndRedaction() async throws {
        let unreadable = try await ServiceConfiguration.reader(arguments: ["example"], environment: ["EXAMPLE_KEY_FILE": "/nonexistent/key.pem"])
        let missingFile = try #require(throws: ServiceKitError.self) { try ExampleSettings(reader: unreadable) }
        #expect(
            missingFile.message.contains("'example.key-file'") && missingFile.message.contains("is not a readable file ("),
            "\(missingFile.message)"
        )

        let noUser = try await ServiceConfiguration.reader(
            arguments: ["example"],
            environment: [
                "POSTGRES_URL": "postgres://:hunter2@db:5432/swarmdeck", "NATS_URL": "nats://127.0.0.1:4222",
                "AUTH_JWT_PUBLIC_KEY_FILE": Self.keyFile,
            ]
        )
        let badURL = try #require(throws: ServiceKitError.self) { try ServiceKitSettings(reader: noUser) }
        #expect(badURL.message.contains("user and database are required") && !badURL.message.contains("hunter2"), "\(badURL.message)")

        let reader = try await ServiceConfiguration.reader(arguments: ["example"], environment: ["EXAMPLE_KEY_FILE": Self.keyFile])
        let settings = try ExampleSettings(reader: reader)
        var dumped = ""
        dump(settings, to: &dumped)
        let printed = [String(describing: settings), String(reflecting: settings), dumped]
        let secret = try String(contentsOfFile: Self.keyFile, encoding: .utf8)
        for text in printed {
            #expect(!text.contains(secret) && text.contains("<secret>"), "\(text)")
            #expect(text.contains("example.share"))
        }
    }
}
