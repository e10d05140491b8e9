import Contracts
import Foundation
import ServiceKit

/// ACP's `session/request_permission` (notes/approvals.md), apart from I/O: what a request on a
/// thread asks (it becomes a gate) and the JSON-RPC result that answers it (appended to the
/// same thread with the request's id).
enum ACPPermission {
    static let method = ACPMethods.requestPermission
    static let cancelMethod = "session/cancel"

    /// A permission request, read from the JSON-RPC message an agent posted.
    struct Request: Equatable {
        /// The request's `id` as JSON (`5`, `"abc"`): the answer carries it back unchanged.
        var id: String
        var sessionID: String?
        var title: String
        var kind: String?
        var toolCallID: String?
        /// `toolCall.rawInput` when it is an object.
        var rawInput: [String: Any]?
        var options: [GateOption]

        static func == (lhs: Request, rhs: Request) -> Bool {
            lhs.id == rhs.id && lhs.sessionID == rhs.sessionID && lhs.title == rhs.title && lhs.kind == rhs.kind && lhs.options == rhs.options
        }
    }

    /// The request a JSON-RPC message carries, or nil when it is not a permission request with an
    /// integer or string id. Options of an unknown kind are left out (at most 8 are kept); a
    /// request left with none can only be answered `cancelled`.
    static func request(from message: [String: Any]) -> Request? {
        guard message["jsonrpc"] as? String == "2.0", message["method"] as? String == Self.method,
            let params = message["params"] as? [String: Any], let id = Self.rawID(message["id"])
        else { return nil }
        let toolCall = params["toolCall"] as? [String: Any] ?? [:]
        let options = (params["options"] as? [[String: Any]] ?? []).compactMap { option -> GateOption? in
            guard let optionID = option["optionId"] as? String, !optionID.isEmpty, optionID.unicodeScalars.count <= 128,
                let kind = (option["kind"] as? String).flatMap(GateOption.Kind.init(rawValue:))
            else { return nil }
            let name = (option["name"] as? String).flatMap { $0.isEmpty ? nil : String($0.prefix(200)) } ?? optionID
            return GateOption(optionId: optionID, name: name, kind: kind)
        }
        var seen: Set<String> = []
        let distinct = options.filter { seen.insert($0.optionId).inserted }
        let title = (toolCall["title"] as? String).flatMap { $0.trimmingWhitespace.nilIfEmpty } ?? "permission request"
        return Request(
            id: id,
            sessionID: params["sessionId"] as? String,
            title: String(title.prefix(500)),
            kind: (toolCall["kind"] as? String).map { String($0.prefix(200)) },
            toolCallID: toolCall["toolCallId"] as? String,
            rawInput: toolCall["rawInput"] as? [String: Any],
            options: Array(distinct.prefix(8))
        )
    }

    /// A JSON-RPC id as JSON text (``JSONRPCID/text(_:)``).
    static func rawID(_ value: Any?) -> String? { JSONRPCID.text(value) }

    /// The answer to request `id`: the option chosen, or `cancelled` (expired, cancelled, or
    /// settled without an option), byte for byte as ACP's schema has it.
    static func answer(id: String, optionID: String?) -> [UInt8] {
        let outcome = optionID.map { #"{"outcome":"selected","optionId":\#(JSONRPCID.jsonString($0))}"# } ?? #"{"outcome":"cancelled"}"#
        return Array(#"{"jsonrpc":"2.0","id":\#(id),"result":{"outcome":\#(outcome)}}"#.utf8)
    }

}
