/// Checks an agent's credential (an ingest key, `sdi_…`) and answers its tenant. The event log
/// library's `IngestKeyVerifier` is the implementation; ServiceKit's authentication
/// middlewares take any.
public protocol AgentKeyAuthenticator: Sendable {
    /// The tenant `key` belongs to.
    /// - Throws: `AuthInvalid` for a malformed, unknown or revoked key; `ServiceUnavailable`
    ///   when it cannot be checked right now.
    func authenticate(_ key: String) async throws(APIError) -> String
    /// The id of `key` (public, unlike its secret), or nil when it is not a key.
    func keyID(of key: String) -> String?
}
