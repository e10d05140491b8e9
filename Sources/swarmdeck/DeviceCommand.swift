import ArgumentParser
import AsyncHTTPClient
import ControlAPIContract
import Foundation
import ServiceKit
import SwarmdeckTools

/// `swarmdeck device …`: a tenant's devices and enrolment codes, listed and revoked through
/// control-api with an admin token the command signs itself.
struct DeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "List and revoke a tenant's devices and enrolment codes (admin, with the signing key).",
        subcommands: [List.self, Revoke.self, RevokeCodes.self]
    )

    /// What every subcommand takes: the tenant, the key to sign with, control-api's address.
    struct Target: ParsableArguments {
        @Option(help: "The tenant id.")
        var tenant: String

        @OptionGroup var signing: SigningKeyOptions

        @Option(help: "Base URL of control-api or the edge.")
        var url = "http://127.0.0.1:8080"

        /// Runs `body` with a control-api client holding a short admin token of the tenant.
        func withClient<T>(_ body: (Client) async throws -> T) async throws -> T {
            let signer = try await self.signing.signer()
            let token = try await signer.sign(tenant: self.tenant, subject: "cli-admin", scopes: [.admin], lifetime: .seconds(120))
            let http = ClientTrust.httpClient()
            do {
                let result = try await body(try Client.controlAPI(url: self.url, credential: token, httpClient: http, timeout: .seconds(10)))
                try await http.shutdown()
                return result
            } catch {
                try? await http.shutdown()
                throw error
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The tenant's devices, newest first.")

        @OptionGroup var target: Target

        func run() async throws {
            let devices = try await self.target.withClient { control in
                switch try await control.listDevices(query: .init(limit: 500)) {
                case .ok(let answer): try answer.body.json.devices
                case .default(let status, let error): throw ControlAPIClientError(status: status, error)
                }
            }
            for device in devices {
                let state = device.revokedAt.map { "revoked \($0.ISO8601Format())" } ?? "active"
                print("\(device.deviceId)  \(device.name)  \(device.platform ?? "-")  since \(device.createdAt.ISO8601Format())  \(state)")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a device: its refresh fails at once, its tokens and open streams end within seconds."
        )

        @OptionGroup var target: Target

        @Argument(help: "The device id (see device list).")
        var deviceID: String

        func run() async throws {
            let device = try await self.target.withClient { control in
                switch try await control.revokeDevice(path: .init(deviceId: self.deviceID)) {
                case .ok(let answer): try answer.body.json
                case .default(let status, let error): throw ControlAPIClientError(status: status, error)
                }
            }
            print("revoked \(device.deviceId) (\(device.name)) at \(device.revokedAt?.ISO8601Format() ?? "?")")
        }
    }

    struct RevokeCodes: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "revoke-codes", abstract: "Revoke unused enrolment codes.")

        @OptionGroup var target: Target

        @Argument(help: "The codes (sde_…).")
        var codes: [String]

        func validate() throws {
            guard (1...100).contains(self.codes.count) else { throw ValidationError("give 1 to 100 codes") }
        }

        func run() async throws {
            let revoked = try await self.target.withClient { control in
                switch try await control.revokeEnrolmentCodes(body: .json(.init(codes: self.codes))) {
                case .ok(let answer): try answer.body.json.revoked
                case .default(let status, let error): throw ControlAPIClientError(status: status, error)
                }
            }
            print("revoked \(revoked) of \(self.codes.count) code(s) (used, unknown or already revoked ones are not counted)")
        }
    }
}
