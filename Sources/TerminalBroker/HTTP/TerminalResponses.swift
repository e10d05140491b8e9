import Contracts
import Foundation
import Hummingbird
import ServiceKit

/// One tmux session as the phone lists it (seed 002 §13.2's fields, plus its state).
struct TerminalSessionInfo: Codable, Sendable, Equatable {
    var sessionId: String
    var displayName: String
    var hostId: String
    var hostnameOrIP: String
    var port: Int
    var username: String
    var tmuxSessionName: String
    /// The agent running in it, when known (not mapped yet: always null).
    var agentId: String?
    var swarmId: String?
    /// `attached` when some tmux client (a person, the broker) is attached, else `detached`.
    var status: String
    var attachedClients: Int
    var cols: Int
    var rows: Int
    var createdAt: Date
    var lastActivity: Date
    /// Only on `GET /v1/terminal/sessions/{id}`: how a direct client authenticates.
    var authMode: String?

    init(host: TerminalHost, session: TmuxCommandLine.Session, detailed: Bool = false) {
        let id = TerminalSessionID(hostID: host.hostId, name: session.name)
        self.sessionId = id.description
        self.displayName = "\(session.name) on \(host.name)"
        self.hostId = host.hostId
        self.hostnameOrIP = host.address
        self.port = host.port
        self.username = host.username
        self.tmuxSessionName = session.name
        self.status = session.attachedClients > 0 ? "attached" : "detached"
        self.attachedClients = session.attachedClients
        self.cols = session.cols
        self.rows = session.rows
        self.createdAt = session.created
        self.lastActivity = session.lastActivity
        self.authMode = detailed ? "publicKey" : nil
    }
}

/// How listing one host went.
struct HostListing: Codable, Sendable, Equatable {
    struct Failure: Codable, Sendable, Equatable {
        var code: String
        var message: String
    }

    var hostId: String
    var name: String
    var status: String
    var error: Failure?
}

struct SessionList: ResponseEncodable, Decodable {
    var sessions: [TerminalSessionInfo]
    var hosts: [HostListing]
}

extension TerminalSessionInfo: ResponseEncodable {}

struct HostList: ResponseEncodable, Decodable {
    var hosts: [TerminalHost]
}

extension TerminalHost: ResponseEncodable {}

struct HostKeyInfo: ResponseEncodable, Decodable {
    var hostId: String
    /// The key pinned on first use for the host's address and port (OpenSSH format), if any.
    var pinnedKey: String?
}

struct AuditList: ResponseEncodable, Decodable {
    var entries: [HostStore.AuditEntry]
}

struct RecordingList: ResponseEncodable, Decodable {
    var recordings: [TerminalRecordings.Info]
}
