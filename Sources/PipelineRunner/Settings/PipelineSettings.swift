import Contracts
import Foundation
public import ServiceKit

/// pipeline-runner's own configuration keys and their values.
public struct PipelineSettings: ServiceSettings {
    /// The Postgres schema pipeline-runner owns: pipelines, stages, artifacts.
    @Setting("pipeline.schema", "the Postgres schema pipeline-runner owns", default: "pipeline", .identifier)
    public var schema: String
    /// The Messages API base URL (Anthropic's, or the local provider's).
    @Setting(
        "pipeline.anthropic.base-url",
        "the Messages API's base URL (the local stack points it at anthropic-local)",
        default: "https://api.anthropic.com",
        .baseURL
    )
    var anthropicBaseURL: String
    /// The API key file's content as read at start; nil when none is configured (``anthropicKey``).
    @Setting(
        "pipeline.anthropic.api-key-file",
        "a file holding the provider's API key; empty: none, and every pipeline fails with ProviderKeyMissing",
        secret: true,
        .optional(.fileContents, emptyIsAbsent: true)
    )
    var anthropicKeyFileContents: String?
    @Setting(
        "pipeline.anthropic.max-retries",
        "retries of a provider call that failed with 408, 409, 429, 5xx or a connection error (the official SDKs' default)",
        default: 2,
        in: 0...10
    )
    var anthropicMaxRetries: Int
    @Setting("pipeline.anthropic.timeout-seconds", "the longest one provider call may take (then ProviderUnreachable)", default: 600, in: 5...3600)
    var anthropicTimeoutSeconds: Int
    @Setting("pipeline.max-tokens", "max_tokens of every provider call (seed 001: 4096)", default: 4096, in: 1...128_000)
    var maxTokens: Int
    @Setting(
        "pipeline.models-file",
        "a JSON price table {asOf, models: {name: {input, output}}} in USD per million tokens; empty: seed 001's table. A model not in it is refused",
        .optional(.text, emptyIsAbsent: true)
    )
    var modelsFile: String?
    /// The price table read from ``modelsFile`` (by ``validate()``), or seed 001's.
    var prices: ModelPrices = .seed
    /// The swarm every pipeline is an agent of (reserved: agents cannot use it).
    var swarm: String { ReservedIDs.pipelineSwarm }
    @Setting(
        "pipeline.max-running",
        "pipelines one replica runs at once; the rest wait for a free slot (on any replica)",
        default: 100,
        in: 1...10_000
    )
    var maxRunning: Int
    @Setting("pipeline.max-active-per-tenant", "unfinished pipelines one tenant may have (429 RateLimited beyond)", default: 50, in: 1...100_000)
    var maxActivePerTenant: Int
    @Setting(
        "pipeline.creates-per-minute",
        "pipelines one tenant may create per minute, all the replicas together (429 RateLimited beyond; each costs a planner call)",
        default: 30,
        in: 1...100_000
    )
    var createsPerMinute: Int
    @Setting("pipeline.max-stages", "stages a plan may have; a planner answer with more makes no pipeline (422 NoPipeline)", default: 10, in: 1...100)
    var maxStages: Int
    @Setting(
        "pipeline.lease-seconds",
        "how long a replica holds a pipeline it runs without renewing; a replica that died loses it after this, and another resumes it",
        default: 30,
        in: 3...3600
    )
    var leaseSeconds: Int
    @Setting(
        "pipeline.gate-expiry-seconds",
        "how long an attended stage's approval gate waits (at most approvals.max-expiry-seconds, or approvals refuses it and the pipeline fails); expiry settles it as approvals.expiry-outcome says",
        default: 3600,
        in: 1...(30 * 86_400)
    )
    var gateExpirySeconds: Int
    @Setting(
        "pipeline.research-allow-private",
        "let researchers fetch loopback, private and link-local addresses (off: only public ones, so the runner cannot reach internal services)",
        default: false
    )
    var researchAllowPrivate: Bool
    @Setting("pipeline.research-timeout-seconds", "seconds one research fetch may take (seed 001: 15)", default: 15, in: 1...120)
    var researchTimeoutSeconds: Int
    @Setting(
        "pipeline.research-max-characters",
        "characters of a fetched page's text kept for the stage (seed 001: 8000)",
        default: 8000,
        in: 100...1_000_000
    )
    var researchMaxCharacters: Int
    /// Where artifacts of pipelines created with `export` are written; nil: export is off.
    @Setting(
        "pipeline.export-dir",
        "where artifacts of pipelines created with export are written, <tenant>/{title}/{role}-{ISO8601}.md; empty: export is refused",
        .optional(.text, emptyIsAbsent: true)
    )
    var exportDirectory: String?
    /// Output growth events one running stage sends per second at most.
    @Setting(
        "pipeline.output-events-per-second",
        "events showing a running stage's output grow, per stage per second at most (0: none; the artifact still arrives)",
        default: 2,
        in: 0...100
    )
    var outputEventsPerSecond: Int
    @Setting(.trustedProxies("pipeline"))
    var trustedProxies: Set<String>

    public init() {}

    /// The API key as read at start; nil when none is configured (pipelines then fail with
    /// `ProviderKeyMissing`).
    var anthropicKey: String? {
        let key = self.anthropicKeyFileContents?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        return key.isEmpty ? nil : key
    }

    public mutating func validate() throws(ServiceKitError) {
        guard let modelsFile = self.modelsFile else { return }
        guard let data = FileManager.default.contents(atPath: modelsFile), let prices = try? JSONDecoder().decode(ModelPrices.self, from: data),
            !prices.models.isEmpty,
            prices.models.values.allSatisfy({ $0.input >= 0 && $0.output >= 0 && $0.input.isFinite && $0.output.isFinite })
        else {
            throw ServiceKitError(
                .configuration,
                "\(self.$modelsFile) \(modelsFile) is not a price table ({\"asOf\": \"YYYY-MM-DD\", \"models\": {\"name\": {\"input\": 3, \"output\": 15}}})"
            )
        }
        self.prices = prices
    }
}
