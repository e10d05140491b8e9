public import AgentChannelContract
public import AsyncHTTPClient
import Foundation
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime

extension Client {
    /// A client of the agents' channel (generated from openapi/agent-channel.yaml), which
    /// control-api serves, at `url`, the service or the edge, sending
    /// `Authorization: Bearer <credential>`: an ingest key to open a session, the session's
    /// token for everything else.
    /// - Parameter timeout: for a whole request; a long poll needs more than its wait.
    public static func agentChannel(url: String, credential: String, httpClient: HTTPClient, timeout: Duration = .seconds(40)) throws -> Client {
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
    /// The error of an agent channel operation's `default` (error) answer (control-api's).
    public init(status: Int, _ answer: Components.Responses._Error) {
        let envelope = try? answer.body.json.error
        self.init(status: status, service: "control-api", code: envelope?.code, message: envelope?.message)
    }
}
