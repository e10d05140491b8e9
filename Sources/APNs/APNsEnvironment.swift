/// Which APNs a device token belongs to: a development build's tokens are only valid on the
/// sandbox, an App Store or TestFlight build's only on production.
public enum APNsEnvironment: String, Sendable, Hashable, Codable, CaseIterable {
    case sandbox
    case production

    /// Apple's host for this environment.
    public var appleURL: String {
        switch self {
        case .sandbox: "https://api.development.push.apple.com"
        case .production: "https://api.push.apple.com"
        }
    }
}
