import Contracts
import ControlAPIContract
import Foundation
import ServiceKit

/// Sign-in through an OpenID Connect provider: authorization code with PKCE, control-api the
/// relying party; the client that started it trades a one-time code for our token pair.
extension AuthHandler {
    func getOIDCSignIn(_ input: Operations.GetOIDCSignIn.Input) async throws -> Operations.GetOIDCSignIn.Output {
        let oidc = try self.oidcSignIn()
        return .ok(.init(body: .json(.init(issuer: oidc.settings.issuer, name: oidc.settings.displayName))))
    }

    func startOIDCSignIn(_ input: Operations.StartOIDCSignIn.Input) async throws -> Operations.StartOIDCSignIn.Output {
        try await self.limitBySource()
        let oidc = try self.oidcSignIn()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try InputCheck.text(body.deviceName, "deviceName", max: 200)
        if let platform = body.platform { try InputCheck.text(platform, "platform", max: 64, required: false) }
        if let state = body.state { try InputCheck.text(state, "state", max: 256, required: false) }
        guard oidc.settings.returnURIs.contains(body.returnUri) else {
            throw APIError(.invalidRequest, "returnUri is not one a sign-in may return to (control.oidc.return-uris)")
        }
        guard PKCE.isChallenge(body.codeChallenge) else {
            throw APIError(.invalidRequest, "codeChallenge must be the S256 challenge of a verifier: 43 base64url characters")
        }
        let metadata: OIDCProvider.Metadata
        do {
            metadata = try await oidc.provider.discovery()
        } catch {
            throw APIError(.serviceUnavailable, "the sign-in provider cannot be used now: \(error)", retryAfterSeconds: 5)
        }
        let state = randomHex(bytes: 32)
        let nonce = randomHex(bytes: 16)
        let verifier = PKCE.verifier()
        let expiresAt = try await oidc.logins.begin(
            OIDCLogins.Pending(
                tenant: oidc.settings.tenant,
                verifier: verifier,
                nonce: nonce,
                returnURI: body.returnUri,
                clientState: body.state,
                clientChallenge: body.codeChallenge,
                deviceName: body.deviceName,
                platform: body.platform
            ),
            state: state,
            source: ClientAddress.limitKey(RequestScope.current?.clientAddress ?? "local"),
            maxPending: oidc.settings.maxPendingLogins
        )
        let url = FormEncoding.url(
            metadata.authorizationEndpoint,
            adding: [
                ("response_type", "code"), ("client_id", oidc.settings.clientID), ("redirect_uri", oidc.settings.redirectURI),
                ("scope", oidc.settings.requestScopes), ("state", state), ("nonce", nonce),
                ("code_challenge", PKCE.challenge(of: verifier)), ("code_challenge_method", "S256"),
            ]
        )
        return .ok(.init(body: .json(.init(authorizationUrl: url, expiresAt: expiresAt))))
    }

    func finishOIDCSignIn(_ input: Operations.FinishOIDCSignIn.Input) async throws -> Operations.FinishOIDCSignIn.Output {
        try await self.limitBySource()
        let oidc = try self.oidcSignIn()
        let query = input.query
        guard let state = query.state, !state.isEmpty, state.utf8.count <= 256, let login = try await oidc.logins.take(state: state) else {
            throw APIError(.invalidRequest, "this sign-in is unknown, was finished already or has expired; start again")
        }
        var answer: [(String, String)]
        do {
            let code = try await self.signIn(login, query: query, oidc: oidc)
            answer = [("code", code)]
        } catch let refusal as OIDCProvider.Failure {
            answer = [("error", refusal.code), ("error_description", refusal.shown)]
        }
        if let clientState = login.clientState { answer.append(("state", clientState)) }
        return .found(.init(headers: .init(location: FormEncoding.url(login.returnURI, adding: answer))))
    }

    /// The one-time code `login` ends in, once the provider's code is exchanged and its ID
    /// token checked; a ``OIDCProvider/Failure`` says why not (logged here).
    private func signIn(_ login: OIDCLogins.Pending, query: Operations.FinishOIDCSignIn.Input.Query, oidc: OIDCSignIn) async throws -> String {
        let logger = RequestScope.current?.logger ?? self.logger
        do {
            if let error = query.error {
                let code = OIDCSignIn.providerErrors.contains(error) ? error : "provider_error"
                throw OIDCProvider.Failure("the provider ended the sign-in (\(code))", code: code, shown: "the provider ended the sign-in (\(code))")
            }
            guard let code = query.code, !code.isEmpty else { throw OIDCProvider.Failure("the provider sent no code") }
            let token = try await oidc.provider.exchange(code: code, verifier: login.verifier)
            let claims = try await oidc.provider.verifiedClaims(of: token)
            do {
                try claims.check(issuer: oidc.settings.issuer, clientID: oidc.settings.clientID, nonce: login.nonce, now: Date())
            } catch {
                // The claim checks' reasons are fixed words: the client may see them.
                throw OIDCProvider.Failure(error.reason, shown: error.reason)
            }
            let scopes = oidc.settings.scopeMap.scopes(for: claims.claims)
            guard !scopes.isEmpty else {
                throw OIDCProvider.Failure("\(claims.person) is in no group that grants a scope here", code: "no_scopes")
            }
            let granted = try await oidc.logins.grant(login, person: claims.person, scopes: scopes.map(\.rawValue).sorted())
            logger.notice("signed in through the provider", metadata: ["person": "\(claims.person)", "tenant": "\(login.tenant)"])
            return granted
        } catch let failure as OIDCProvider.Failure {
            logger.notice("sign-in through the provider refused", metadata: ["reason": "\(failure.description)"])
            throw failure
        }
    }

    func exchangeOIDCCode(_ input: Operations.ExchangeOIDCCode.Input) async throws -> Operations.ExchangeOIDCCode.Output {
        try await self.limitBySource()
        _ = try self.oidcSignIn()
        guard case .json(let body) = input.body else { throw APIError(.unsupportedMediaType, "send application/json") }
        try InputCheck.text(body.code, "code", max: 128)
        guard PKCE.isVerifier(body.codeVerifier) else {
            throw APIError(.invalidRequest, "codeVerifier must be 43 to 128 of A-Z a-z 0-9 - . _ ~ (RFC 7636)")
        }
        return .created(.init(body: .json(.init(try await self.devices.redeem(oidcCode: body.code, verifier: body.codeVerifier)))))
    }

    private func oidcSignIn() throws(APIError) -> OIDCSignIn {
        guard let oidc = self.oidc else {
            throw APIError(.notFound, "sign-in through an OpenID Connect provider is not configured here (control.oidc.issuer)")
        }
        return oidc
    }
}
