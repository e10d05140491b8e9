import AgentChannelContract
import ApprovalsContract
import Contracts
import ControlAPIContract
import Foundation
import HealthMonitorContract
import NotifierContract
import PipelineRunnerContract
import ServiceKit
import TerminalBrokerContract
import TestSupport
import Testing

/// Every OpenAPI service's credential table, built from its document's security requirements,
/// against the document: every operation has exactly one entry, of the kind its `security`
/// declares, with the scopes its summary names.
@Suite("Each service's credential table is its OpenAPI document's")
struct OperationCredentialsTests {
    /// A document, its generated security table, and how many operations it has.
    struct Document: Sendable, CustomTestStringConvertible {
        /// Its name: `openapi/<service>.yaml`.
        var service: String
        var text: String
        var security: [String: [[String: [String]]]]
        var operations: Int
        /// Whether every operation takes an access token (none is public or an agent's).
        var onlyAccessTokens = true
        var testDescription: String { self.service }
    }

    static let documents = [
        Document(
            service: "control-api",
            text: ControlAPIContract.openAPIDocument,
            security: ControlAPIContract.operationSecurity,
            operations: 31,
            onlyAccessTokens: false
        ),
        Document(
            service: "agent-channel",
            text: AgentChannelContract.openAPIDocument,
            security: AgentChannelContract.operationSecurity,
            operations: 4,
            onlyAccessTokens: false
        ),
        Document(
            service: "approvals",
            text: ApprovalsContract.openAPIDocument,
            security: ApprovalsContract.operationSecurity,
            operations: 4,
            onlyAccessTokens: false
        ),
        Document(
            service: "health-monitor",
            text: HealthMonitorContract.openAPIDocument,
            security: HealthMonitorContract.operationSecurity,
            operations: 10
        ),
        Document(service: "notifier", text: NotifierContract.openAPIDocument, security: NotifierContract.operationSecurity, operations: 5),
        Document(
            service: "terminal-broker",
            text: TerminalBrokerContract.openAPIDocument,
            security: TerminalBrokerContract.operationSecurity,
            operations: 11
        ),
        Document(
            service: "pipeline-runner",
            text: PipelineRunnerContract.openAPIDocument,
            security: PipelineRunnerContract.operationSecurity,
            operations: 5
        ),
    ]

    @Test("the list above is every document scripts/generate-openapi generates a contract from")
    func everyDocument() throws {
        let generated = try OpenAPIDeclarations.generatedDocuments()
        #expect(!generated.isEmpty && Set(generated) == Set(Self.documents.map(\.service)), "\(generated)")
    }

    @Test("every operation has exactly one credential, of the kind the document's security declares", arguments: Self.documents)
    func kinds(document: Document) throws {
        let table = try OperationCredential.table(document.security)
        let declared = OpenAPIDeclarations.security(document.text)
        #expect(declared.count == document.operations)
        #expect(Set(declared.keys) == Set(table.keys))
        for (operation, scheme) in declared {
            let kind: String? =
                switch table[operation] {
                case .none?: "none"
                case .accessToken(let scopes)?: scopes.isEmpty ? "accessToken without scope" : "accessToken"
                case .ingestKey?: "ingestKey"
                case .agentSession?: "agentSession"
                case nil: nil
                }
            #expect(kind == scheme, "\(operation): the document says \(scheme), the table \(kind ?? "nothing")")
            #expect(!document.onlyAccessTokens || kind == "accessToken", "\(operation) of \(document.service) takes no access token")
        }
    }

    @Test("every operation that takes an access token asks for the scopes its summary names", arguments: Self.documents)
    func scopes(document: Document) throws {
        let table = try OperationCredential.table(document.security)
        for (operation, scopes) in OpenAPIDeclarations.scopes(document.text) {
            guard case .accessToken(let required)? = table[operation] else {
                #expect(scopes.isEmpty, "\(operation) names scopes but takes no access token")
                continue
            }
            #expect(
                !scopes.isEmpty && Set(required) == scopes,
                "\(operation): the summary names \(scopes.map(\.rawValue).sorted()), the table \(required.map(\.rawValue).sorted())"
            )
        }
    }
}
