import Foundation

extension ControlHarness {
    /// Where a console's sign-in returns (one of control-api's return URIs in ``withOIDCProvider(_:)``).
    public static let oidcConsole = "https://console.test/signin/oidc"
    /// Where a phone's sign-in returns.
    public static let oidcPhone = "swarmdeck://signin"

    /// A provider (oidc-provider-mock) with alice (in `ops`), bob (in no group) and carol (in
    /// `admins`), and a harness whose control-api signs them in to its tenant through it.
    public static func withOIDCProvider(_ overrides: [String: String] = [:]) async throws -> (OIDCProviderProcess, ControlHarness) {
        let provider = try await OIDCProviderProcess.start(users: [
            ["sub": "alice", "email": "alice@example.com", "email_verified": true, "groups": ["ops"]],
            ["sub": "bob", "email": "bob@example.com", "groups": [] as [String]],
            ["sub": "carol", "groups": ["admins", "ops"]],
        ])
        var probe = try await ControlHarness()
        // A confidential client, as a server is (oidc-provider-mock takes any secret, and no
        // public client at its token endpoint); PKCE as well.
        let secret = FileManager.default.temporaryDirectory.appendingPathComponent("oidc-secret-\(UUID().uuidString)")
        try "s3cret with spaces & signs\n".write(to: secret, atomically: true, encoding: .utf8)
        let environment: [String: String] = [
            "CONTROL_OIDC_CLIENT_SECRET_FILE": secret.path,
            "CONTROL_OIDC_ISSUER": provider.issuer,
            "CONTROL_OIDC_CLIENT_ID": "swarmdeck-test",
            "CONTROL_OIDC_REDIRECT_URI": "http://127.0.0.1:9/v1/auth/oidc/callback",
            "CONTROL_OIDC_RETURN_URIS": "\(Self.oidcConsole), \(Self.oidcPhone)",
            "CONTROL_OIDC_TENANT": probe.tenant,
            "CONTROL_OIDC_SCOPE_MAP": "ops=stream:read agents:control;admins=admin",
            "CONTROL_AUTH_PER_MINUTE": "10000",
        ].merging(overrides) { $1 }
        probe.live.overrides.merge(environment) { $1 }
        return (provider, probe)
    }
}
