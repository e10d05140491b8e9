import Foundation

extension NATSConfiguration {
    /// The server URLs for messages: each without its user and password (a service's URL
    /// carries its NATS user's password).
    var displayedServers: String {
        self.servers.map { server in
            guard var components = URLComponents(string: server), components.user != nil || components.password != nil else { return server }
            components.user = nil
            components.password = nil
            return components.string ?? "<a NATS URL>"
        }
        .joined(separator: ",")
    }
}
