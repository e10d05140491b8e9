import Foundation

/// The provider's models and their prices, as data (`pipeline.models-file`, or seed 001's
/// table): US dollars per million tokens. Cache writes cost 1.25× the input price (5-minute
/// cache), cache reads 0.1× (Anthropic's pricing; seed 001 does not price them).
struct ModelPrices: Sendable, Equatable, Codable {
    struct Price: Sendable, Equatable, Codable {
        var input: Double
        var output: Double
    }

    /// When the prices were taken (ISO 8601 date), so a stale table is visible.
    var asOf: String
    var models: [String: Price]

    /// Seed 001's table (its "Cost Calculation Reference", 2026-02-24).
    static let seed = ModelPrices(
        asOf: "2026-02-24",
        models: [
            "claude-opus-4-6": Price(input: 15.00, output: 75.00),
            "claude-sonnet-4-6": Price(input: 3.00, output: 15.00),
            "claude-haiku-4-5-20251001": Price(input: 0.80, output: 4.00),
        ]
    )

    static let cacheWriteFactor = 1.25
    static let cacheReadFactor = 0.1

    /// Seed 001's formula, `(input / 1e6) × inputPrice + (output / 1e6) × outputPrice`, plus the
    /// cache tokens at their prices; nil for a model the table does not have.
    func cost(model: String, input: Int64, output: Int64, cacheCreation: Int64 = 0, cacheRead: Int64 = 0) -> Double? {
        guard let price = self.models[model] else { return nil }
        return (Double(input) / 1_000_000.0) * price.input + (Double(output) / 1_000_000.0) * price.output
            + (Double(cacheCreation) / 1_000_000.0) * price.input * Self.cacheWriteFactor
            + (Double(cacheRead) / 1_000_000.0) * price.input * Self.cacheReadFactor
    }
}
