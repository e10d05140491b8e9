import ArgumentParser
import Contracts
import Foundation
import ServiceKit

/// `swarmdeck token keygen|mint`: the signing key and access tokens for a tenant.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Create the ES256 signing key and mint access tokens (admin).",
        subcommands: [Keygen.self, Mint.self]
    )

    struct Keygen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a new ES256 key pair: FILE (private, mode 600) and FILE.pub (public, for auth.jwt.public-key-file)."
        )

        @Option(name: .long, help: "Where to write the private key.")
        var out: String

        @Flag(help: "Replace an existing key (every token signed with the old one stops working).")
        var force = false

        func run() throws {
            if FileManager.default.fileExists(atPath: self.out) && !self.force {
                throw ValidationError("\(self.out) exists; pass --force to replace it")
            }
            let pair = AccessTokenSigner.generateKeyPair()
            let directory = URL(fileURLWithPath: self.out).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: self.out, contents: Data(pair.privateKey.utf8), attributes: [.posixPermissions: 0o600])
            else {
                throw ValidationError("cannot write \(self.out)")
            }
            try Data(pair.publicKey.utf8).write(to: URL(fileURLWithPath: self.out + ".pub"))
            print("wrote \(self.out) and \(self.out).pub")
        }
    }

    struct Mint: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print an access token for a tenant, signed with the private key.")

        @OptionGroup var signing: SigningKeyOptions

        @Option(help: "The tenant the token is for.")
        var tenant: String

        @Option(help: "The token subject: an operator or device id.")
        var subject: String

        @Option(
            name: .customLong("scope"),
            help: "A scope to grant; repeat for more. One of: \(Scope.allCases.map(\.rawValue).joined(separator: ", "))."
        )
        var scopes: [String] = []

        @Flag(help: "Grant every scope.")
        var allScopes = false

        @Option(help: "Lifetime in seconds.")
        var ttl: Int = 3600

        func validate() throws {
            guard !self.tenant.isEmpty, !self.subject.isEmpty else { throw ValidationError("--tenant and --subject must not be empty") }
            guard (1...86_400 * 30).contains(self.ttl) else { throw ValidationError("--ttl must be between 1 second and 30 days") }
            try SigningKeyOptions.checkScopes(self.scopes)
            guard self.allScopes || !self.scopes.isEmpty else { throw ValidationError("grant at least one --scope, or --all-scopes") }
        }

        func run() async throws {
            let signer = try await self.signing.signer()
            let scopes = self.allScopes ? Set(Scope.allCases) : Set(self.scopes.compactMap(Scope.init(rawValue:)))
            print(try await signer.sign(tenant: self.tenant, subject: self.subject, scopes: scopes, lifetime: .seconds(self.ttl)))
        }
    }
}
