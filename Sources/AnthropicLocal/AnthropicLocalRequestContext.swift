import Hummingbird
import NIOCore

/// The request context of the local provider's routes: Hummingbird's basics and the
/// connection, which a ``AnthropicLocalFault/dropConnection`` fault closes.
struct AnthropicLocalRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection the request came on.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }
}

/// The header names the local provider reads and writes.
enum AnthropicLocalHeader {
    typealias Name = HTTPFields.Element.Name

    static let apiKey = Name("x-api-key")!
    static let anthropicVersion = Name("anthropic-version")!
    static let anthropicBeta = Name("anthropic-beta")!
    static let requestID = Name("request-id")!
    static let retryAfter = Name("retry-after")!
}
