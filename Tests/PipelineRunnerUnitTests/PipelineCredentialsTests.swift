import Contracts
import PipelineRunnerContract
import ServiceKit
import TestSupport
import Testing

@testable import PipelineRunner

/// pipeline-runner's credential table against its OpenAPI document.
@Suite struct PipelineCredentialsTests {
    @Test func everyOperationTakesAnAccessTokenWithTheScopesItsSummaryNames() {
        let declared = OpenAPIDeclarations.security(openAPIDocument)
        #expect(declared.count == 5)
        #expect(Set(declared.keys) == Set(PipelineHandler.credentials.keys))
        for (operation, scopes) in OpenAPIDeclarations.scopes(openAPIDocument) {
            guard case .accessToken(let required)? = PipelineHandler.credentials[operation] else {
                Issue.record("\(operation) takes no access token")
                continue
            }
            #expect(!scopes.isEmpty && Set(required) == scopes, "\(operation): the summary names \(scopes), the table \(required)")
        }
    }
}
