public import Foundation

/// Seed 000's entities as its phone declares them (§8.1), for contract tests that decode our
/// answers into them.
public enum Seed000 {
    /// `Incident`: `id`, `severity`, `summary`, `swarmId?`, `agentId?`, `createdAt`, `status`, `webUrl`.
    public struct Incident: Decodable, Sendable {
        public var id: String
        public var severity: String
        public var summary: String
        public var swarmId: String?
        public var agentId: String?
        public var createdAt: Date
        public var status: String
        public var webUrl: String
    }
}
