import Contracts
import HealthMonitorContract
import ServiceKit
import TestSupport
import Testing

@testable import HealthMonitor

/// Health-monitor's credential table against its OpenAPI document.
@Suite struct HealthCredentialsTests {
    @Test func everyOperationTakesAnAccessTokenWithTheScopesItsSummaryNames() {
        let declared = OpenAPIDeclarations.security(openAPIDocument)
        #expect(declared.count == 10)
        #expect(Set(declared.keys) == Set(HealthHandler.credentials.keys))
        for (operation, scopes) in OpenAPIDeclarations.scopes(openAPIDocument) {
            guard case .accessToken(let required)? = HealthHandler.credentials[operation] else {
                Issue.record("\(operation) takes no access token")
                continue
            }
            #expect(!scopes.isEmpty && Set(required) == scopes, "\(operation): the summary names \(scopes), the table \(required)")
        }
    }
}
