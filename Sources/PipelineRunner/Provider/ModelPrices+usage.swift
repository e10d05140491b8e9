import Anthropic

extension ModelPrices {
    /// One provider call's tokens for `model`, priced from this table (0 for a model it lacks).
    func usage(model: String, _ usage: AnthropicUsage) -> UsageRecord {
        let (input, output) = (Int64(usage.inputTokens), Int64(usage.outputTokens))
        let (cacheCreation, cacheRead) = (Int64(usage.cacheCreationInputTokens), Int64(usage.cacheReadInputTokens))
        return UsageRecord(
            model: model,
            input: input,
            output: output,
            cacheCreation: cacheCreation,
            cacheRead: cacheRead,
            costUSD: self.cost(model: model, input: input, output: output, cacheCreation: cacheCreation, cacheRead: cacheRead) ?? 0
        )
    }
}
