import Contracts
import Foundation
public import ServiceKit

/// The keys of sign-in through an OpenID Connect provider (`control.oidc.*`, a
/// ``SettingGroup`` enabled by `issuer`: none is read while it is empty);
/// ``resolved(webBaseURL:)`` makes them the ``OIDCSettings`` control-api uses.
public struct OIDCSignInSettings: SettingsGroup {
    @Setting(
        "issuer",
        "the OpenID Connect provider people sign in through (its issuer URL; https, or http on this machine); empty: off",
        default: "",
        Self.providerURLOrEmpty
    )
    var issuer: String
    @Setting("client-id", "control-api's client id at the provider", default: "swarmdeck")
    var clientID: String
    @Setting(
        "client-secret-file",
        "a file holding the client's secret at the provider (a confidential client); empty: a public client, PKCE alone",
        secret: true,
        .optional(.fileContents, emptyIsAbsent: true)
    )
    var clientSecret: String?
    @Setting(
        "redirect-uri",
        "the redirect URI registered at the provider; empty: control.web-base-url + /v1/auth/oidc/callback",
        default: "",
        Self.providerURLOrEmpty
    )
    var redirectURI: String
    @Setting(
        "return-uris",
        "comma-separated URIs a sign-in may return to with its code (exact match; the console, a phone's own scheme); empty: control.web-base-url + /signin/oidc",
        default: [],
        SettingFormat(
            expected: "comma-separated absolute URIs or empty",
            parse: { text in
                let list = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                return list.allSatisfy(OIDCSettings.isReturnURI) ? list : nil
            },
            render: { $0.joined(separator: ",") }
        )
    )
    var returnURIs: [String]
    @Setting(
        "tenant",
        "the tenant people of this provider sign in to (required with an issuer)",
        .optional(SettingFormat.text.checked("a tenant id") { EntityID.problem($0, field: "tenant") == nil })
    )
    var tenant: String?
    @Setting(
        "request-scopes",
        "the scopes asked of the provider (must include openid; add the one that brings groups, if the provider needs one)",
        default: "openid email profile",
        SettingFormat.text.checked("scopes that include openid") { $0.split(separator: " ").contains("openid") }
    )
    var requestScopes: String
    @Setting("groups-claim", "the ID token claim that holds a person's groups (a string or an array of strings)", default: "groups")
    var groupsClaim: String
    @Setting(
        "scope-map",
        "the scopes each group grants: group=scope scope;group=scope (the last = divides, so a group may hold =; a person with no scope cannot sign in)",
        default: "",
        .anyText
    )
    var scopeMap: String
    @Setting(
        "default-scopes",
        "scopes everyone who signs in through the provider holds (space-separated); empty: only what groups grant",
        default: "",
        .anyText
    )
    var defaultScopes: String
    @Setting("display-name", "what sign-in buttons call the provider", default: "Single sign-on")
    var displayName: String
    @Setting(
        "max-pending-logins",
        "sign-ins started and not finished (each kept ten minutes); 429 past it",
        default: 10_000,
        in: 1...1_000_000
    )
    var maxPendingLogins: Int

    public init() {}

    /// A provider's URL (``OIDCSettings/isProviderURL(_:)``), or empty.
    static let providerURLOrEmpty = SettingFormat.anyText.checked("an https URL (http on this machine only) or empty") {
        $0.isEmpty || OIDCSettings.isProviderURL($0)
    }

    /// What control-api uses; nil when sign-in through a provider is off (no issuer).
    func resolved(webBaseURL: String) throws(ServiceKitError) -> OIDCSettings? {
        if self.issuer.isEmpty { return nil }
        guard let tenant = self.tenant else {
            throw ServiceKitError(.configuration, "missing configuration key \(self.$tenant): \(self.$tenant.summary)")
        }
        let map: OIDCScopeMap
        switch OIDCScopeMap.parse(claim: self.groupsClaim, defaults: self.defaultScopes, map: self.scopeMap) {
        case .success(let parsed): map = parsed
        case .failure(let error): throw ServiceKitError(.configuration, "malformed \(self.$scopeMap): \(error.reason)")
        }
        return OIDCSettings(
            issuer: self.issuer,
            clientID: self.clientID,
            clientSecret: self.clientSecret?.trimmingCharacters(in: .whitespacesAndNewlines),
            redirectURI: self.redirectURI.isEmpty ? webBaseURL + "/v1/auth/oidc/callback" : self.redirectURI,
            returnURIs: Set(self.returnURIs.isEmpty ? [webBaseURL + "/signin/oidc"] : self.returnURIs),
            tenant: tenant,
            requestScopes: self.requestScopes,
            scopeMap: map,
            displayName: self.displayName,
            maxPendingLogins: self.maxPendingLogins
        )
    }
}

/// Sign-in through an OpenID Connect provider, as control-api uses it: made from the
/// `control.oidc.*` keys (``OIDCSignInSettings``) when `control.oidc.issuer` is set.
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
