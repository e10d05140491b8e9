public import Configuration
import Contracts
import Foundation
public import ServiceKit

/// pipeline-runner's own configuration keys and their values.
public struct PipelineSettings: ServiceSettings {
    /// The Postgres schema pipeline-runner owns: pipelines, stages, artifacts.
    public var schema: String
    /// The Messages API base URL (Anthropic's, or the local provider's).
    var anthropicBaseURL: String
    /// The API key as read at start; nil when none is configured (pipelines then fail with
    /// `ProviderKeyMissing`).
    var anthropicKey: String?
    var anthropicMaxRetries: Int
    var anthropicTimeoutSeconds: Int
    var maxTokens: Int
    var prices: ModelPrices
    /// The swarm every pipeline is an agent of (reserved: agents cannot use it).
    var swarm: String { ReservedIDs.pipelineSwarm }
    var maxRunning: Int
    var maxActivePerTenant: Int
    var createsPerMinute: Int
    var maxStages: Int
    var leaseSeconds: Int
    var gateExpirySeconds: Int
    var researchAllowPrivate: Bool
    var researchTimeoutSeconds: Int
    var researchMaxCharacters: Int
    /// Where artifacts of pipelines created with `export` are written; nil: export is off.
    var exportDirectory: String?
    /// Output growth events one running stage sends per second at most.
    var outputEventsPerSecond: Int
    var trustedProxies: Set<String>

    public static let keys: [SettingKey] = [
        .pipelineSchema, .pipelineAnthropicBaseURL, .pipelineAnthropicKeyFile, .pipelineAnthropicMaxRetries, .pipelineAnthropicTimeoutSeconds,
        .pipelineMaxTokens, .pipelineModelsFile, .pipelineMaxRunning, .pipelineMaxActivePerTenant, .pipelineCreatesPerMinute,
        .pipelineMaxStages, .pipelineLeaseSeconds, .pipelineGateExpirySeconds, .pipelineResearchAllowPrivate, .pipelineResearchTimeoutSeconds,
        .pipelineResearchMaxCharacters, .pipelineExportDirectory, .pipelineOutputEventsPerSecond, .pipelineTrustedProxies,
    ]

    public init(reader: ConfigReader) throws(ServiceKitError) {
        self.schema = try reader.identifierSetting(.pipelineSchema)
        self.anthropicBaseURL = try reader.baseURLSetting(.pipelineAnthropicBaseURL)
        let keyFile = try reader.setting(.pipelineAnthropicKeyFile, expected: "a path or empty") { $0 }
        if keyFile.isEmpty {
            self.anthropicKey = nil
        } else {
            guard let text = try? String(contentsOfFile: keyFile, encoding: .utf8) else {
                throw ServiceKitError(.configuration, "cannot read \(SettingKey.pipelineAnthropicKeyFile) \(keyFile)")
            }
            let key = text.trimmingCharacters(in: .whitespacesAndNewlines)
            self.anthropicKey = key.isEmpty ? nil : key
        }
        self.anthropicMaxRetries = try reader.setting(.pipelineAnthropicMaxRetries, in: 0...10)
        self.anthropicTimeoutSeconds = try reader.setting(.pipelineAnthropicTimeoutSeconds, in: 5...3600)
        self.maxTokens = try reader.setting(.pipelineMaxTokens, in: 1...128_000)
        let modelsFile = try reader.setting(.pipelineModelsFile, expected: "a path or empty") { $0 }
        if modelsFile.isEmpty {
            self.prices = .seed
        } else {
            guard let data = FileManager.default.contents(atPath: modelsFile), let prices = try? JSONDecoder().decode(ModelPrices.self, from: data),
                !prices.models.isEmpty,
                prices.models.values.allSatisfy({ $0.input >= 0 && $0.output >= 0 && $0.input.isFinite && $0.output.isFinite })
            else {
                throw ServiceKitError(
                    .configuration,
                    "\(SettingKey.pipelineModelsFile) \(modelsFile) is not a price table ({\"asOf\": \"YYYY-MM-DD\", \"models\": {\"name\": {\"input\": 3, \"output\": 15}}})"
                )
            }
            self.prices = prices
        }
        self.maxRunning = try reader.setting(.pipelineMaxRunning, in: 1...10_000)
        self.maxActivePerTenant = try reader.setting(.pipelineMaxActivePerTenant, in: 1...100_000)
        self.createsPerMinute = try reader.setting(.pipelineCreatesPerMinute, in: 1...100_000)
        self.maxStages = try reader.setting(.pipelineMaxStages, in: 1...100)
        self.leaseSeconds = try reader.setting(.pipelineLeaseSeconds, in: 3...3600)
        self.gateExpirySeconds = try reader.setting(.pipelineGateExpirySeconds, in: 1...(30 * 86_400))
        self.researchAllowPrivate = try reader.setting(.pipelineResearchAllowPrivate)
        self.researchTimeoutSeconds = try reader.setting(.pipelineResearchTimeoutSeconds, in: 1...120)
        self.researchMaxCharacters = try reader.setting(.pipelineResearchMaxCharacters, in: 100...1_000_000)
        let export = try reader.setting(.pipelineExportDirectory, expected: "a path or empty") { $0 }
        self.exportDirectory = export.isEmpty ? nil : export
        self.outputEventsPerSecond = try reader.setting(.pipelineOutputEventsPerSecond, in: 0...100)
        self.trustedProxies = Set(try reader.setting(.pipelineTrustedProxies).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
    }
}

extension SettingKey {
    static let pipelineSchema = SettingKey("pipeline.schema", "the Postgres schema pipeline-runner owns", default: "pipeline")
    static let pipelineAnthropicBaseURL = SettingKey(
        "pipeline.anthropic.base-url",
        "the Messages API's base URL (the local stack points it at anthropic-local)",
        default: "https://api.anthropic.com"
    )
    static let pipelineAnthropicKeyFile = SettingKey(
        "pipeline.anthropic.api-key-file",
        "a file holding the provider's API key; empty: none, and every pipeline fails with ProviderKeyMissing",
        default: "",
        secret: true
    )
    static let pipelineAnthropicMaxRetries = SettingKey(
        "pipeline.anthropic.max-retries",
        "retries of a provider call that failed with 408, 409, 429, 5xx or a connection error (the official SDKs' default)",
        default: "2"
    )
    static let pipelineAnthropicTimeoutSeconds = SettingKey(
        "pipeline.anthropic.timeout-seconds",
        "the longest one provider call may take (then ProviderUnreachable)",
        default: "600"
    )
    static let pipelineMaxTokens = SettingKey("pipeline.max-tokens", "max_tokens of every provider call (seed 001: 4096)", default: "4096")
    static let pipelineModelsFile = SettingKey(
        "pipeline.models-file",
        "a JSON price table {asOf, models: {name: {input, output}}} in USD per million tokens; empty: seed 001's table. A model not in it is refused",
        default: ""
    )
    static let pipelineMaxRunning = SettingKey(
        "pipeline.max-running",
        "pipelines one replica runs at once; the rest wait for a free slot (on any replica)",
        default: "100"
    )
    static let pipelineMaxActivePerTenant = SettingKey(
        "pipeline.max-active-per-tenant",
        "unfinished pipelines one tenant may have (429 RateLimited beyond)",
        default: "50"
    )
    static let pipelineCreatesPerMinute = SettingKey(
        "pipeline.creates-per-minute",
        "pipelines one tenant may create per minute per replica (429 RateLimited beyond; each costs a planner call)",
        default: "30"
    )
    static let pipelineMaxStages = SettingKey(
        "pipeline.max-stages",
        "stages a plan may have; a planner answer with more makes no pipeline (422 NoPipeline)",
        default: "10"
    )
    static let pipelineLeaseSeconds = SettingKey(
        "pipeline.lease-seconds",
        "how long a replica holds a pipeline it runs without renewing; a replica that died loses it after this, and another resumes it",
        default: "30"
    )
    static let pipelineGateExpirySeconds = SettingKey(
        "pipeline.gate-expiry-seconds",
        "how long an attended stage's approval gate waits (at most approvals.max-expiry-seconds, or approvals refuses it and the pipeline fails); expiry settles it as approvals.expiry-outcome says",
        default: "3600"
    )
    static let pipelineResearchAllowPrivate = SettingKey(
        "pipeline.research-allow-private",
        "let researchers fetch loopback, private and link-local addresses (off: only public ones, so the runner cannot reach internal services)",
        default: "false"
    )
    static let pipelineResearchTimeoutSeconds = SettingKey(
        "pipeline.research-timeout-seconds",
        "seconds one research fetch may take (seed 001: 15)",
        default: "15"
    )
    static let pipelineResearchMaxCharacters = SettingKey(
        "pipeline.research-max-characters",
        "characters of a fetched page's text kept for the stage (seed 001: 8000)",
        default: "8000"
    )
    static let pipelineExportDirectory = SettingKey(
        "pipeline.export-dir",
        "where artifacts of pipelines created with export are written, <tenant>/{title}/{role}-{ISO8601}.md; empty: export is refused",
        default: ""
    )
    static let pipelineOutputEventsPerSecond = SettingKey(
        "pipeline.output-events-per-second",
        "events showing a running stage's output grow, per stage per second at most (0: none; the artifact still arrives)",
        default: "2"
    )
    static let pipelineTrustedProxies = SettingKey(
        "pipeline.trusted-proxies",
        "peers whose X-Forwarded-For names the client, comma-separated; * trusts every peer",
        default: "127.0.0.1,::1"
    )
}
