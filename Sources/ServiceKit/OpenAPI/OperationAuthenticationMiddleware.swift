public import Contracts
public import HTTPTypes
import Hummingbird
public import OpenAPIRuntime

/// The credential an OpenAPI operation asks of its caller.
public enum OperationCredential: Sendable, Hashable {
    /// Anyone (registration, refresh, public keys).
    case none
    /// An operator's access token holding at least one of these scopes.
    case accessToken(anyOf: [Scope])
    /// An agent's ingest key.
    case ingestKey
    /// An agent session token (one agent's command channel).
    case agentSession
}

/// Who is calling an OpenAPI operation, as ``OperationAuthenticationMiddleware`` established.
public enum Caller: Sendable {
    case anonymous
    /// An operator (a device's access token).
    case person(AccessIdentity)
    /// An agent, by its ingest key's tenant and id.
    case agent(tenant: String, keyID: String)
    /// One agent, by its session token.
    case agentSession(AgentSessionIdentity)

    /// The caller of the running operation.
    @TaskLocal public static var current: Caller?

    /// The caller's tenant (none for an anonymous one).
    public var tenant: String? {
        switch self {
        case .anonymous: nil
        case .person(let identity): identity.tenant
        case .agent(let tenant, _): tenant
        case .agentSession(let session): session.tenant
        }
    }

    /// The operator calling the running operation; a 401 when it is not one (an operation whose
    /// credential table says otherwise: a bug, refused rather than served).
    public static func person() throws(APIError) -> AccessIdentity {
        guard case .person(let identity) = Self.current else { throw APIError(.authInvalid, "an access token is required") }
        return identity
    }

    /// The tenant of the agent calling the running operation; a 401 when it is not one.
    public static func agentTenant() throws(APIError) -> String {
        try Self.agentKey().tenant
    }

    /// The tenant and key id of the agent calling the running operation; a 401 when it is not one.
    public static func agentKey() throws(APIError) -> (tenant: String, keyID: String) {
        guard case .agent(let tenant, let keyID) = Self.current else { throw APIError(.authInvalid, "an ingest key is required") }
        return (tenant, keyID)
    }

    /// The agent session calling the running operation; a 401 when it is not one.
    public static func agentSession() throws(APIError) -> AgentSessionIdentity {
        guard case .agentSession(let session) = Self.current else { throw APIError(.authInvalid, "an agent session token is required") }
        return session
    }
}

/// The authenticator of an OpenAPI service: checks each operation's credential, by its
/// operation id, before the request is decoded, and sets ``Caller/current`` for the handler.
/// An operation missing from the table is refused (fail closed).
public struct OperationAuthenticationMiddleware: ServerMiddleware {
    let credentials: [String: OperationCredential]
    let verifier: AccessTokenVerifier
    let agentKeys: (any AgentKeyAuthenticator)?

    /// - Parameters:
    ///   - credentials: Operation id → what it requires.
    ///   - verifier: Checks access tokens.
    ///   - agentKeys: Checks ingest keys (needed when an operation asks for ``OperationCredential/ingestKey``).
    public init(credentials: [String: OperationCredential], verifier: AccessTokenVerifier, agentKeys: (any AgentKeyAuthenticator)? = nil) {
        self.credentials = credentials
        self.verifier = verifier
        self.agentKeys = agentKeys
    }

    /// The authenticator of a document's operations, their credentials read from the security
    /// requirements it declares (``OperationCredential/table(_:)``).
    /// - Throws: ``ServiceKitError/Code/configuration`` when an operation's requirements are not
    ///   a shape it reads (the service does not start).
    public init(
        security: [String: [[String: [String]]]],
        verifier: AccessTokenVerifier,
        agentKeys: (any AgentKeyAuthenticator)? = nil
    ) throws(ServiceKitError) {
        self.init(credentials: try OperationCredential.table(security), verifier: verifier, agentKeys: agentKeys)
    }

    public func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        metadata: ServerRequestMetadata,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let caller = try await self.caller(of: operationID, authorization: request.headerFields[.authorization])
        if let tenant = caller.tenant { RequestTenant.record(tenant) }
        return try await Caller.$current.withValue(caller) {
            try await next(request, body, metadata)
        }
    }

    /// Who is calling `operationID` with this `Authorization` header.
    func caller(of operationID: String, authorization: String?) async throws(APIError) -> Caller {
        switch self.credentials[operationID] {
        case .none?:
            return .anonymous
        case .accessToken(let scopes)?:
            let token = try Request.bearerToken(authorization: authorization, "access token")
            return .person(try await self.verifier.verify(token, requiring: scopes))
        case .ingestKey?:
            guard let agentKeys = self.agentKeys else { throw APIError(.serverError, "\(operationID) has no ingest key authenticator") }
            let key = try Request.bearerToken(authorization: authorization, "ingest key")
            let tenant = try await agentKeys.authenticate(key)
            guard let keyID = agentKeys.keyID(of: key) else { throw APIError(.authInvalid, "not a Swarmdeck ingest key (sdi_…)") }
            return .agent(tenant: tenant, keyID: keyID)
        case .agentSession?:
            let token = try Request.bearerToken(authorization: authorization, "agent session token")
            return .agentSession(try await self.verifier.verifyAgentSession(token))
        case nil:
            throw APIError(.serverError, "\(operationID) declares no credential")
        }
    }
}
