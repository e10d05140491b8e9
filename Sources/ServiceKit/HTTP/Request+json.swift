import Foundation
public import Hummingbird

extension Request {
    /// The body of a JSON request, whole: 415 `UnsupportedMediaType` unless `Content-Type` is
    /// `application/json`, 413 `PayloadTooLarge` beyond `limit` bytes (read no further).
    public func jsonBody(upTo limit: Int) async throws -> ByteBuffer {
        guard let type = self.headers[.contentType], type.lowercased().hasPrefix("application/json") else {
            throw APIError(.unsupportedMediaType, "send application/json")
        }
        return try await self.body.collect(upTo: limit)
    }

    /// The JSON body decoded as `T` (see ``jsonBody(upTo:)``); 400 `InvalidRequest` naming the
    /// field and what was expected when it does not decode.
    /// - Parameter shape: the expected body for the error message, e.g. `{"name": "…"}`.
    public func decodeJSON<T: Decodable>(_ type: T.Type, upTo limit: Int, shape: String) async throws -> T {
        let body = try await self.jsonBody(upTo: limit)
        do {
            return try JSONDecoder().decode(T.self, from: body)
        } catch {
            throw APIError(.invalidRequest, "expected \(shape) (\(describeDecodingFailure(error)))")
        }
    }
}
