import Contracts
import ControlAPIContract
import Foundation
import ServiceKit
import Testing

@testable import ControlAPI

/// control-api's credential table against its OpenAPI document: every operation has exactly
/// one entry, and the kind of credential is the one the document's `security` declares.
@Suite struct OperationCredentialsTests {
    /// operationId → the security scheme the document names for it (`none` for `security: []`,
    /// the document's default `accessToken` when the operation says nothing).
    static func declaredSecurity() -> [String: String] {
        let lines = openAPIDocument.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let paths = lines.prefix { !$0.hasPrefix("components:") }
        var declared: [String: String] = [:]
        var current: String?
        var afterSecurity = false
        for line in paths {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("operationId:") {
                current = trimmed.dropFirst("operationId:".count).trimmingCharacters(in: .whitespaces)
                declared[current!] = "accessToken"
                afterSecurity = false
            } else if let operation = current, trimmed.hasPrefix("security:") {
                if trimmed == "security: []" { declared[operation] = "none" } else { afterSecurity = true }
            } else if let operation = current, afterSecurity, trimmed.hasPrefix("- ") {
                declared[operation] = String(trimmed.dropFirst(2).prefix { $0 != ":" })
                afterSecurity = false
            }
        }
        return declared
    }

    @Test func everyOperationHasTheDeclaredKindOfCredential() {
        let declared = Self.declaredSecurity()
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

    /// operationId → the scopes its summary names (`(scope `stream:read`)`).
    static func declaredScopes() -> [String: Set<Scope>] {
        let lines = openAPIDocument.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var declared: [String: Set<Scope>] = [:]
        var current: String?
        for line in lines.prefix(while: { !$0.hasPrefix("components:") }) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("operationId:") {
                current = trimmed.dropFirst("operationId:".count).trimmingCharacters(in: .whitespaces)
                declared[current!] = []
            } else if let operation = current, trimmed.hasPrefix("summary:") {
                declared[operation] = Set(Scope.allCases.filter { trimmed.contains("`\($0.rawValue)`") })
            }
        }
        return declared
    }

    @Test func everyTokenOperationAsksForTheScopesItsSummaryNames() {
        for (operation, scopes) in Self.declaredScopes() {
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
