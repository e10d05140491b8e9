import Configuration
import Contracts
import Foundation
import ServiceKit

/// Sign-in through an OpenID Connect provider (`control.oidc.*`): off while
/// `control.oidc.issuer` is empty.
struct OIDCSettings: Sendable {
    /// The provider's issuer URL, exactly as its discovery document and ID tokens name it.
    var issuer: String
    var clientID: String
    /// For a confidential client (sent with HTTP Basic); nil for a public one (PKCE alone).
    var clientSecret: String?
    /// Where the provider sends the browser back: `/v1/auth/oidc/callback` at the edge.
    var redirectURI: String
    /// Where control-api may send the browser on with a sign-in code (the console, a phone's scheme).
    var returnURIs: Set<String>
    /// The tenant people of this provider sign in to.
    var tenant: String
    /// The OAuth scopes asked of the provider.
    var requestScopes: String
    var scopeMap: OIDCScopeMap
    /// What a sign-in button calls the provider.
    var displayName: String
    /// Logins started and not finished that may wait (about; 429 past it).
    var maxPendingLogins: Int

    static let keys: [SettingKey] = [
        .oidcIssuer, .oidcClientID, .oidcClientSecretFile, .oidcRedirectURI, .oidcReturnURIs, .oidcTenant, .oidcRequestScopes,
        .oidcGroupsClaim, .oidcScopeMap, .oidcDefaultScopes, .oidcDisplayName, .oidcMaxPendingLogins,
    ]

    /// nil when sign-in through a provider is off.
    static func read(_ reader: ConfigReader, webBaseURL: String) throws(ServiceKitError) -> OIDCSettings? {
        let issuer = try reader.setting(.oidcIssuer, expected: "an http(s) URL or empty") { text in
            text.isEmpty || OIDCSettings.isProviderURL(text) ? text : nil
        }
        if issuer.isEmpty { return nil }
        let secretFile = try reader.setting(.oidcClientSecretFile, expected: "a path or empty") { $0 }
        var secret: String?
        if !secretFile.isEmpty {
            guard let text = try? String(contentsOfFile: secretFile, encoding: .utf8) else {
                throw ServiceKitError(.configuration, "cannot read \(SettingKey.oidcClientSecretFile) \(secretFile)")
            }
            secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let redirect = try reader.setting(.oidcRedirectURI, expected: "an https URL (http on this machine only) or empty") { text in
            text.isEmpty || OIDCSettings.isProviderURL(text) ? text : nil
        }
        let returns = try reader.setting(.oidcReturnURIs, expected: "comma-separated absolute URIs or empty") { text -> [String]? in
            let list = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            return list.allSatisfy(OIDCSettings.isReturnURI) ? list : nil
        }
        let tenant = try reader.setting(.oidcTenant, expected: "a tenant id") { EntityID.problem($0, field: "tenant") == nil ? $0 : nil }
        let map: OIDCScopeMap
        switch OIDCScopeMap.parse(
            claim: try reader.setting(.oidcGroupsClaim),
            defaults: try reader.setting(.oidcDefaultScopes, expected: "scopes or empty") { $0 },
            map: try reader.setting(.oidcScopeMap, expected: "group=scope…;… or empty") { $0 }
        ) {
        case .success(let parsed): map = parsed
        case .failure(let error): throw ServiceKitError(.configuration, "malformed \(SettingKey.oidcScopeMap): \(error.reason)")
        }
        return OIDCSettings(
            issuer: issuer,
            clientID: try reader.setting(.oidcClientID),
            clientSecret: secret,
            redirectURI: redirect.isEmpty ? webBaseURL + "/v1/auth/oidc/callback" : redirect,
            returnURIs: Set(returns.isEmpty ? [webBaseURL + "/signin/oidc"] : returns),
            tenant: tenant,
            requestScopes: try reader.setting(.oidcRequestScopes, expected: "scopes that include openid") { text in
                text.split(separator: " ").contains("openid") ? text : nil
            },
            scopeMap: map,
            displayName: try reader.setting(.oidcDisplayName),
            maxPendingLogins: try reader.setting(.oidcMaxPendingLogins, in: 1...1_000_000)
        )
    }

    /// https, or http to this machine only (a provider for tests or development): tokens and
    /// codes never cross a network in the clear.
    static func isProviderURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let host = url.host, url.query == nil, url.fragment == nil else { return false }
        switch url.scheme {
        case "https": return true
        case "http": return host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]"
        default: return false
        }
    }

    /// An absolute URI without a fragment (a phone's own scheme is allowed: `swarmdeck://signin`).
    static func isReturnURI(_ text: String) -> Bool {
        guard text.utf8.count <= 2048, let url = URL(string: text), let scheme = url.scheme, !scheme.isEmpty else { return false }
        return url.fragment == nil && !text.contains("#") && scheme != "javascript" && scheme != "data"
    }
}

extension SettingKey {
    static let oidcIssuer = SettingKey(
        "control.oidc.issuer",
        "the OpenID Connect provider people sign in through (its issuer URL; https, or http on this machine); empty: off",
        default: ""
    )
    static let oidcClientID = SettingKey("control.oidc.client-id", "control-api's client id at the provider", default: "swarmdeck")
    static let oidcClientSecretFile = SettingKey(
        "control.oidc.client-secret-file",
        "a file holding the client's secret at the provider (a confidential client); empty: a public client, PKCE alone",
        default: "",
        secret: true
    )
    static let oidcRedirectURI = SettingKey(
        "control.oidc.redirect-uri",
        "the redirect URI registered at the provider; empty: control.web-base-url + /v1/auth/oidc/callback",
        default: ""
    )
    static let oidcReturnURIs = SettingKey(
        "control.oidc.return-uris",
        "comma-separated URIs a sign-in may return to with its code (the console, a phone's scheme); empty: control.web-base-url + /signin/oidc",
        default: ""
    )
    static let oidcTenant = SettingKey("control.oidc.tenant", "the tenant people of this provider sign in to (required with an issuer)")
    static let oidcRequestScopes = SettingKey("control.oidc.request-scopes", "the scopes asked of the provider", default: "openid email profile")
    static let oidcGroupsClaim = SettingKey("control.oidc.groups-claim", "the ID token claim that holds a person's groups", default: "groups")
    static let oidcScopeMap = SettingKey(
        "control.oidc.scope-map",
        "the scopes each group grants: group=scope scope;group=scope (a person with no scope cannot sign in)",
        default: ""
    )
    static let oidcDefaultScopes = SettingKey(
        "control.oidc.default-scopes",
        "scopes everyone who signs in through the provider holds (space-separated); empty: only what groups grant",
        default: ""
    )
    static let oidcDisplayName = SettingKey("control.oidc.display-name", "what sign-in buttons call the provider", default: "Single sign-on")
    static let oidcMaxPendingLogins = SettingKey(
        "control.oidc.max-pending-logins",
        "sign-ins started and not finished (each kept ten minutes); 429 past it",
        default: "10000"
    )
}
