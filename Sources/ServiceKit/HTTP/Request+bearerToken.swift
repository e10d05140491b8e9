public import Hummingbird

extension Request {
    /// The token of `Authorization: Bearer <token>`.
    /// - Parameter credential: what the token is, for the error message (e.g. "access token").
    /// - Throws: `AuthInvalid` when the header is missing or not a bearer token.
    public func bearerToken(_ credential: String) throws(APIError) -> String {
        try Self.bearerToken(authorization: self.headers[.authorization], credential)
    }

    /// The token of an `Authorization` header's value `Bearer <token>`.
    /// - Throws: `AuthInvalid` when the value is missing or not a bearer token.
    public static func bearerToken(authorization: String?, _ credential: String) throws(APIError) -> String {
        guard let authorization else {
            throw APIError(.authInvalid, "missing Authorization: Bearer <\(credential)>")
        }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].isEmpty else {
            throw APIError(.authInvalid, "the Authorization header must be Bearer <\(credential)>")
        }
        return String(parts[1])
    }
}
