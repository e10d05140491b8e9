import ArgumentParser
import AsyncHTTPClient
import Contracts
import Foundation
import NIOCore
import ServiceKit

/// `swarmdeck tenant create`: a tenant and its one-time enrolment codes, through control-api.
struct TenantCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tenant",
        abstract: "Create tenants and enrolment codes (admin, with the signing key).",
        subcommands: [Create.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create TENANT (if new) and print one-time enrolment codes a device trades at POST /v1/auth/device/register."
        )

        @Option(help: "The tenant id.")
        var tenant: String

        /// Signs a short admin token for the call.
        @OptionGroup var signing: SigningKeyOptions

        @Option(help: "Base URL of control-api or the edge.")
        var url = "http://127.0.0.1:8080"

        @Option(help: "How many codes.")
        var codes = 1

        @Option(name: .customLong("scope"), help: "A scope the codes grant; repeat for more (default: every scope but admin).")
        var scopes: [String] = []

        @Option(help: "Seconds the codes stay valid.")
        var ttl = 86_400

        @Flag(help: "Print only the codes, one per line.")
        var quiet = false

        func validate() throws {
            guard !self.tenant.isEmpty, self.tenant.utf8.count <= 256 else { throw ValidationError("--tenant must be 1 to 256 bytes") }
            guard (1...100).contains(self.codes) else { throw ValidationError("--codes must be 1…100") }
            try SigningKeyOptions.checkScopes(self.scopes)
        }

        func run() async throws {
            let signer = try await self.signing.signer()
            let token = try await signer.sign(tenant: self.tenant, subject: "cli-admin", scopes: [.admin], lifetime: .seconds(120))
            var body: [String: Any] = ["count": self.codes, "ttlSeconds": self.ttl]
            if !self.scopes.isEmpty { body["scopes"] = self.scopes }
            var request = HTTPClientRequest(url: self.url + "/v1/admin/enrolment-codes")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            let response: HTTPClientResponse
            let answer: ByteBuffer
            do {
                response = try await client.execute(request, timeout: .seconds(10))
                answer = try await response.body.collect(upTo: 1 << 20)
                try await client.shutdown()
            } catch {
                try? await client.shutdown()
                throw error
            }
            guard response.status == .created else {
                throw ValidationError("control-api answered \(response.status.code): \(String(buffer: answer))")
            }
            struct Created: Decodable {
                var codes: [String]
                var scopes: [String]
                var expiresAt: String
            }
            let created = try JSONDecoder().decode(Created.self, from: Data(buffer: answer))
            if self.quiet {
                print(created.codes.joined(separator: "\n"))
            } else {
                print(
                    "tenant \(self.tenant): \(created.codes.count) code(s), scopes \(created.scopes.joined(separator: " ")), valid until \(created.expiresAt)"
                )
                for code in created.codes { print(code) }
            }
        }
    }
}
