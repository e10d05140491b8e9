import Contracts
import ControlAPIContract
import Foundation
import ServiceKit
import TestSupport
import Testing

@testable import ControlAPI

/// control-api's credential table against its OpenAPI document: every operation has exactly
/// one entry, and the kind of credential is the one the document's `security` declares.
@Suite struct OperationCredentialsTests {
    @Test func everyOperationHasTheDeclaredKindOfCredential() {
        let declared = OpenAPIDeclarations.security(openAPIDocument)
        #expect(declared.count >= 18)
        #expect(Set(declared.keys) == Set(ControlAPIHandler.credentials.keys))
        for (operation, scheme) in declared {
            let kind: String? =
                switch ControlAPIHandler.credentials[operation] {
                case .none?: "none"
                case .accessToken(let scopes)?: scopes.isEmpty ? "accessToken without scope" : "accessToken"
                case .ingestKey?: "ingestKey"
                case .agentSession?: "agentSession"
                case nil: nil
                }
            #expect(kind == scheme, "\(operation): the document says \(scheme), the table \(kind ?? "nothing")")
        }
    }

    @Test func everyTokenOperationAsksForTheScopesItsSummaryNames() {
        for (operation, scopes) in OpenAPIDeclarations.scopes(openAPIDocument) {
            guard case .accessToken(let required)? = ControlAPIHandler.credentials[operation] else {
                #expect(scopes.isEmpty, "\(operation) names scopes but takes no access token")
                continue
            }
            #expect(
                Set(required) == scopes,
                "\(operation): the summary names \(scopes.map(\.rawValue).sorted()), the table \(required.map(\.rawValue).sorted())"
            )
        }
    }
}
