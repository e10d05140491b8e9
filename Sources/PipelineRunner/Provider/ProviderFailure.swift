import Anthropic
import Contracts
import ServiceKit

/// Seed 001's error table at our edge: a provider failure as the error envelope's code and the
/// seed's user-facing text.
struct ProviderFailure: Error, Sendable, Equatable {
    var code: ErrorCode
    var message: String
    var retryAfterSeconds: Int?

    init(_ error: AnthropicError) {
        switch error {
        case .missingAPIKey, .authentication:
            // A key refused is as good as none: the operator must set a working one.
            self.code = .providerKeyMissing
        case .rateLimited(let retryAfter, _):
            self.code = .providerRateLimited
            self.retryAfterSeconds = retryAfter.map { max(1, Int($0.rounded(.up))) } ?? 30
        case .overloaded, .server, .invalidRequest, .invalidResponse:
            self.code = .providerError
        case .network:
            self.code = .providerUnreachable
        case .cancelled:
            self.code = .serviceUnavailable
        }
        self.message = error.userMessage
    }

    var apiError: APIError {
        APIError(self.code, self.message, retryAfterSeconds: self.retryAfterSeconds)
    }
}
