import ApprovalsContract
import ArgumentParser
import AsyncHTTPClient
import Foundation
import SwarmdeckTools

/// Where operator commands reach approvals: the edge (or the service) and an access token.
struct OperatorOptions: ParsableArguments {
    @Option(help: "Base URL of the edge or approvals (default: $SWARMDECK_URL or http://127.0.0.1:8080).")
    var url: String?

    @Option(help: "Access token (default: $SWARMDECK_TOKEN; the local stack's .swarmdeck/local.env sets it).")
    var token: String?

    /// Runs `body` with an approvals client holding the token.
    func withApprovals<T>(_ body: (Client) async throws -> T) async throws -> T {
        let environment = ProcessInfo.processInfo.environment
        guard let token = self.token ?? environment["SWARMDECK_TOKEN"], !token.isEmpty else {
            throw ValidationError("give --token or set SWARMDECK_TOKEN (source .swarmdeck/local.env)")
        }
        let url = self.url ?? environment["SWARMDECK_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? "http://127.0.0.1:8080"
        let http = ClientTrust.httpClient()
        do {
            let result = try await body(try Client.approvals(url: url, credential: token, httpClient: http))
            try await http.shutdown()
            return result
        } catch {
            try? await http.shutdown()
            throw error
        }
    }
}

/// `swarmdeck gates`: the tenant's approval gates, newest first.
struct GatesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "gates", abstract: "List approval gates (pending unless --status says otherwise).")

    @Option(help: "pending, decided, expired, cancelled or all.")
    var status = "pending"

    @Option(help: "At most this many.")
    var limit = 50

    @OptionGroup var target: OperatorOptions

    func run() async throws {
        guard let status = Operations.ListApprovalGates.Input.Query.StatusPayload(rawValue: self.status) else {
            throw ValidationError("--status pending, decided, expired, cancelled or all")
        }
        let page = try await self.target.withApprovals { approvals in
            switch try await approvals.listApprovalGates(query: .init(status: status, limit: self.limit)) {
            case .ok(let answer): try answer.body.json
            case .default(let status, let error): throw ControlAPIClientError(status: status, error)
            }
        }
        for gate in page.gates {
            let decided = gate.decidedAt.map { " decided \($0.ISO8601Format())" } ?? " expires \(gate.expiresAt.ISO8601Format())"
            print("\(gate.gateId)  \(gate.status.rawValue)  \(gate.risk.rawValue)  \(gate.swarmId)/\(gate.agentId)  \(gate.summary)\(decided)")
        }
        if page.gates.isEmpty { print("no \(self.status) gates") }
    }
}

/// `swarmdeck gate approve|reject ID`: decides a gate as the token's subject.
struct GateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gate",
        abstract: "Approve or reject an approval gate.",
        subcommands: [Approve.self, Reject.self]
    )

    struct Approve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Approve a pending gate.")
        @Argument(help: "The gate id.") var gateId: String
        @Option(help: "Why (optional).") var reason: String?
        @Option(help: "The option to choose, on a gate that offers options (ACP).") var option: String?
        @OptionGroup var target: OperatorOptions

        func run() async throws {
            try await GateCommand.decide(self.gateId, .approve, reason: self.reason, option: self.option, target: self.target)
        }
    }

    struct Reject: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Reject a pending gate (a reason is required).")
        @Argument(help: "The gate id.") var gateId: String
        @Option(help: "Why (at least approvals.min-reject-reason characters).") var reason: String
        @Option(help: "The option to choose, on a gate that offers options (ACP).") var option: String?
        @OptionGroup var target: OperatorOptions

        func run() async throws {
            try await GateCommand.decide(self.gateId, .reject, reason: self.reason, option: self.option, target: self.target)
        }
    }

    static func decide(
        _ gateID: String,
        _ decision: Components.Schemas.Decision.DecisionPayload,
        reason: String?,
        option: String?,
        target: OperatorOptions
    ) async throws {
        let body = Components.Schemas.Decision(decision: decision, reason: reason, optionId: option, decisionId: "cli-" + UUID().uuidString)
        let receipt = try await target.withApprovals { approvals in
            switch try await approvals.decideApprovalGate(path: .init(gateId: gateID), body: .json(body)) {
            case .ok(let answer): return try answer.body.json
            case .conflict(let answer):
                let conflict = try answer.body.json
                throw ControlAPIClientError("gate \(gateID) was already \(conflict.receipt.status.rawValue) by \(conflict.receipt.decidedBy)")
            case .default(let status, let error): throw ControlAPIClientError(status: status, error)
            }
        }
        print(
            "\(receipt.gateId) \(receipt.status.rawValue) by \(receipt.decidedBy) at \(receipt.decidedAt.ISO8601Format()) (receipt \(receipt.receiptId))"
        )
    }
}
