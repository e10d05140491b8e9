import Contracts
import NotifierContract
import ServiceKit
import TestSupport
import Testing

@testable import Notifier

/// The notifier's credential table against its OpenAPI document.
@Suite struct NotifierCredentialsTests {
    @Test func everyOperationTakesAnAccessTokenWithTheScopesItsSummaryNames() {
        let declared = OpenAPIDeclarations.security(openAPIDocument)
        #expect(declared.count == 5)
        #expect(Set(declared.keys) == Set(NotifierHandler.credentials.keys))
        for (operation, scopes) in OpenAPIDeclarations.scopes(openAPIDocument) {
            guard case .accessToken(let required)? = NotifierHandler.credentials[operation] else {
                Issue.record("\(operation) takes no access token")
                continue
            }
            #expect(!scopes.isEmpty && Set(required) == scopes, "\(operation): the summary names \(scopes), the table \(required)")
        }
    }
}
