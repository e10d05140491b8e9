public import ApprovalsContract
public import AsyncHTTPClient
import Foundation
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime

extension Client {
    /// An approvals client (generated from openapi/approvals.yaml) at `url`, the service or the
    /// edge, sending `Authorization: Bearer <credential>` (an access token, or an agent session
    /// token for `openGate`).
    public static func approvals(url: String, credential: String, httpClient: HTTPClient, timeout: Duration = .seconds(15)) throws -> Client {
        try OpenAPIClientParts.client(
            { Client(serverURL: $0, transport: $1, middlewares: $2) },
            url: url,
            credential: credential,
            httpClient: httpClient,
            timeout: timeout
        )
    }
}

extension ControlAPIClientError {
    /// The error of an approvals operation's `default` (error) answer.
    public init(status: Int, _ answer: Components.Responses._Error) {
        let envelope = try? answer.body.json.error
        self.init(status: status, service: "approvals", code: envelope?.code, message: envelope?.message)
    }
}
