import ControlAPIContract
import Foundation
import Testing

@testable import ControlAPI

/// A control request's receipt is stored as JSON (`control_requests.receipt`) and read back to
/// answer a retry of its request id: receipts stored as the operators' document's type (before
/// the store had its own) must read back, and the store's must read as the document's.
@Suite("ControlReceipt: stored JSON is the operators' document's receipt, both ways")
struct ControlReceiptTests {
    static let receipt = ControlReceipt(
        requestID: "req-1",
        action: .request,
        target: .worker,
        targetID: "w1",
        commands: [.init(commandID: "cmd_1", agentID: "w1"), .init(commandID: "cmd_2", agentID: "w2")],
        acceptedAt: Date(timeIntervalSince1970: 1_790_000_000),
        auditID: 42
    )

    @Test("the store's receipt decodes as the document's, field for field")
    func storeToDocument() throws {
        let stored = try JSONEncoder().encode(Self.receipt)
        let wire = try JSONDecoder().decode(Components.Schemas.ControlReceipt.self, from: stored)
        #expect(wire == Components.Schemas.ControlReceipt(Self.receipt))
        #expect(wire.requestId == "req-1" && wire.action == .request && wire.target == .worker && wire.auditId == 42)
        #expect(wire.commands.map(\.commandId) == ["cmd_1", "cmd_2"])
    }

    @Test("a receipt stored as the document's type reads back as the store's")
    func documentToStore() throws {
        for action in CommandAction.allCases {
            var expected = Self.receipt
            expected.action = action
            let stored = try JSONEncoder().encode(Components.Schemas.ControlReceipt(expected))
            #expect(try JSONDecoder().decode(ControlReceipt.self, from: stored) == expected)
        }
    }
}
