/// Sign-in through an OpenID Connect provider: its settings, the provider and the logins under way.
struct OIDCSignIn: Sendable {
    let settings: OIDCSettings
    let provider: OIDCProvider
    let logins: OIDCLogins

    /// The OAuth error codes passed on to the client as the provider gave them (RFC 6749
    /// §4.1.2.1, OpenID Connect Core §3.1.2.6); any other is `provider_error`.
    static let providerErrors: Set<String> = [
        "access_denied", "login_required", "consent_required", "interaction_required", "account_selection_required",
        "temporarily_unavailable", "server_error",
    ]
}
