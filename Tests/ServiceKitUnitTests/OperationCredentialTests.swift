import Contracts
import ServiceKit
import Testing

@Suite("An operation's credential read from its OpenAPI security requirements")
struct OperationCredentialTests {
    @Test("none, access-token alternatives (any one scope), an agent session, an ingest key")
    func shapes() throws {
        #expect(try OperationCredential(requirements: [], operation: "a") == .none)
        #expect(
            try OperationCredential(requirements: [["accessToken": ["agents:control"]], ["accessToken": ["admin"]]], operation: "a")
                == .accessToken(anyOf: [.agentsControl, .admin])
        )
        #expect(try OperationCredential(requirements: [["agentSession": []]], operation: "a") == .agentSession)
        #expect(try OperationCredential(requirements: [["ingestKey": []]], operation: "a") == .ingestKey)
    }

    @Test(
        "what the middleware cannot check is refused, naming the operation: no scope, two scopes at once, an unknown scope or scheme, a mix",
        arguments: [
            [["accessToken": []]],
            [["accessToken": ["stream:read", "admin"]]],
            [["accessToken": ["stream:everything"]]],
            [["apiKey": []]],
            [["accessToken": ["admin"]], ["agentSession": []]],
            [["agentSession": ["admin"]]],
            [["accessToken": ["admin"], "ingestKey": []]],
        ] as [[[String: [String]]]]
    )
    func refused(requirements: [[String: [String]]]) {
        #expect {
            try OperationCredential(requirements: requirements, operation: "getThing")
        } throws: { error in
            (error as? ServiceKitError)?.code == .configuration && (error as? ServiceKitError)?.message.contains("operation getThing") == true
        }
    }

    @Test("a table of a document: each operation's credential; one it cannot read stops it")
    func table() throws {
        let table = try OperationCredential.table(["a": [], "b": [["agentSession": []]]])
        #expect(table == ["a": OperationCredential.none, "b": .agentSession])
        #expect(throws: ServiceKitError.self) { try OperationCredential.table(["a": [], "c": [["basic": []]]]) }
    }
}
