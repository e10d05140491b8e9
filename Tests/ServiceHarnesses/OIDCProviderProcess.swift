import Foundation
import TestSupport

/// oidc-provider-mock (PyPI, built on Authlib), an OpenID Connect provider not written here,
/// on a loopback port of its own: discovery, JWKS (RS256), the authorization endpoint with
/// its sign-in form, and the token endpoint. `users` are its predefined people, each a JSON
/// object of claims with `sub`.
public final class OIDCProviderProcess: @unchecked Sendable {
    public let port: Int
    private let process: Process

    public var issuer: String { "http://127.0.0.1:\(self.port)" }

    /// Starts the provider and waits for its port, on a thread of its own (``offPool(_:)``).
    public static func start(users: [[String: Any]]) async throws -> OIDCProviderProcess {
        let json = try users.map { try JSONSerialization.data(withJSONObject: $0) }
        return try await offPool { try OIDCProviderProcess(users: json) }
    }

    private init(users: [Data]) throws {
        guard let python = ProcessInfo.processInfo.environment["SWARMDECK_PYTHON"] else {
            throw HarnessError(message: "SWARMDECK_PYTHON is not set: run the tests with ./scripts/test (it installs oidc-provider-mock)")
        }
        self.port = try freeLoopbackPort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-m", "oidc_provider_mock", "--host", "127.0.0.1", "--port", String(self.port), "--require-nonce"]
        for user in users {
            process.arguments? += ["--user-claims", String(decoding: user, as: UTF8.self)]
        }
        process.environment = ProcessInfo.processInfo.environment.merging(["NO_COLOR": "1", "PYTHONWARNINGS": "ignore"]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        try waitForPort(self.port, timeout: 30)
    }

    deinit {
        Foundation.kill(self.process.processIdentifier, SIGKILL)
        self.process.waitUntilExit()
    }
}
