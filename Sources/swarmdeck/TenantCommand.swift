import ArgumentParser
import AsyncHTTPClient
import Contracts
import ControlAPIContract
import Foundation
import ServiceKit
import SwarmdeckTools

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
            let request = Components.Schemas.EnrolmentCodeRequest(
                count: self.codes,
                scopes: self.scopes.isEmpty ? nil : self.scopes.compactMap(Components.Schemas.Scope.init(rawValue:)),
                ttlSeconds: self.ttl
            )
            let client = ClientTrust.httpClient()
            let answer: Operations.CreateEnrolmentCodes.Output
            do {
                let control = try Client.controlAPI(url: self.url, credential: token, httpClient: client, timeout: .seconds(10))
                answer = try await control.createEnrolmentCodes(body: .json(request))
                try await client.shutdown()
            } catch {
                try? await client.shutdown()
                throw error
            }
            let created: Components.Schemas.EnrolmentCodes
            switch answer {
            case .created(let answer): created = try answer.body.json
            case .default(let status, let error): throw ControlAPIClientError(status: status, error)
            }
            if self.quiet {
                print(created.codes.joined(separator: "\n"))
            } else {
                print(
                    "tenant \(self.tenant): \(created.codes.count) code(s), scopes \(created.scopes.map(\.rawValue).joined(separator: " ")), valid until \(created.expiresAt.ISO8601Format())"
                )
                for code in created.codes { print(code) }
            }
        }
    }
}
