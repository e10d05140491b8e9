public import Hummingbird
public import HummingbirdCore
public import Logging

/// A service's WebSocket paths, served by ``WebSocketUpgradeChannel``: each authenticated
/// before the upgrade (a refused request is answered with the error envelope and closed), then
/// opened on the upgraded socket.
///
/// A path is literal segments and `:name` parameters (`v1/terminal/sessions/:sessionId/attach`).
public struct WebSocketRoutes: Sendable {
    /// Opens an upgraded connection: refuses it (``UpgradedWebSocket/send(text:)`` and
    /// ``UpgradedWebSocket/close(_:reason:)``) or serves it, returning when it has ended
    /// (``WebSocketConnection/run(on:handler:)``) or at once
    /// (``WebSocketConnection/start(on:handler:whenDone:)``). A socket neither served nor closed
    /// is closed normally when it returns.
    public typealias Open = @Sendable (WebSocketUpgradeRequest, UpgradedWebSocket) async -> Void

    struct Route: Sendable {
        enum Segment: Sendable, Equatable {
            case literal(String)
            case parameter(String)
        }

        let path: String
        let segments: [Segment]
        /// How to ask for the upgrade, for the HTTP route's answer (`with ?protocol=1`).
        let hint: String
        let authentication: WebSocketAuthentication
        let open: Open
    }

    private var routes: [Route] = []

    public init() {}

    /// Serves `path` to requests whose token `authentication` accepts.
    /// - Parameter hint: how to ask for the upgrade (`"with ?protocol=1"`), said to a request
    ///   that was not one.
    public mutating func add(_ path: String, authentication: WebSocketAuthentication, hint: String = "", open: @escaping Open) {
        let segments = path.split(separator: "/").map { segment -> Route.Segment in
            segment.hasPrefix(":") ? .parameter(String(segment.dropFirst())) : .literal(String(segment))
        }
        self.routes.append(Route(path: path, segments: segments, hint: hint, authentication: authentication, open: open))
    }

    /// The same paths on the HTTP router, for requests that were not upgraded: their
    /// authentication error (401/403, a refused upgrade's answer too), or 400 when they should
    /// have asked for an upgrade.
    public func addHTTPAnswers(to router: Router<ServiceRequestContext>) {
        for route in self.routes {
            router.get(RouterPath(route.path)) { request, _ -> Response in
                _ = try await route.authentication.authenticate(request)
                throw APIError(
                    .invalidRequest,
                    "/\(route.path) is a WebSocket: send an upgrade request" + (route.hint.isEmpty ? "" : " " + route.hint)
                )
            }
        }
    }

    /// The route of `path`, with its parameters' values.
    func match(_ path: String) -> (Route, [String: String])? {
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        for route in self.routes where route.segments.count == components.count {
            var parameters: [String: String] = [:]
            let matches = zip(route.segments, components).allSatisfy { segment, component in
                switch segment {
                case .literal(let literal):
                    return literal == component
                case .parameter(let name):
                    parameters[name] = String(component)
                    return true
                }
            }
            if matches { return (route, parameters) }
        }
        return nil
    }
}

/// What an upgraded request carries to its route: who, the path's parameters, the query.
public struct WebSocketUpgradeRequest: Sendable {
    /// Who the upgrade check authenticated.
    public let identity: AccessIdentity
    /// The path's `:name` parameters.
    public let parameters: [String: String]
    /// The request's URI (its query parameters).
    public let uri: URI
    /// The service's logger with the identity's metadata.
    public let logger: Logger
}
