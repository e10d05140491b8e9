import Contracts
import Foundation
import ServiceKit

/// A host an administrator registered: where the broker connects over SSH, as whom, and which
/// tmux server it asks (the user's default one, or a named socket).
struct TerminalHost: Sendable, Codable, Equatable {
    var hostId: String
    var name: String
    var address: String
    var port: Int
    var username: String
    /// `tmux -L NAME`: a named server socket of that user; nil for the default one.
    var tmuxSocket: String?
    var createdAt: Date

    var endpoint: SSHEndpoint { SSHEndpoint(host: self.address, port: self.port, username: self.username) }
}

/// `POST /v1/terminal/hosts`.
struct HostRegistration: Sendable {
    var name: String
    var address: String
    var port: Int?
    var username: String
    var tmuxSocket: String?

    /// The checks the fields must pass (each refusal names its field).
    func validated() throws(APIError) -> HostRegistration {
        try Self.check(self.name, "name", max: 64, Self.isNameByte)
        try Self.check(self.address, "address", max: 253) { Self.isNameByte($0) || $0 == UInt8(ascii: ":") }
        guard let first = self.address.utf8.first, first != UInt8(ascii: "-") else {
            throw APIError(.invalidRequest, "address must be a host name or an IP address", details: ["address": "a host name or IP address"])
        }
        try InputCheck.range(self.port, "port", 1...65_535)
        try Self.check(self.username, "username", max: 32) { Self.isNameByte($0) && $0 != UInt8(ascii: ".") }
        guard self.username.utf8.first != UInt8(ascii: "-") else {
            throw APIError(.invalidRequest, "username must not start with -", details: ["username": "a POSIX user name"])
        }
        if let socket = self.tmuxSocket { try Self.check(socket, "tmuxSocket", max: 64, Self.isNameByte) }
        return self
    }

    static func isNameByte(_ byte: UInt8) -> Bool { TmuxNames.isNameByte(byte) }

    private static func check(_ text: String, _ field: String, max: Int, _ allowed: (UInt8) -> Bool) throws(APIError) {
        guard (1...max).contains(text.utf8.count), text.utf8.allSatisfy(allowed) else {
            throw APIError(
                .invalidRequest,
                "\(field) must be 1 to \(max) of A-Z a-z 0-9 . _ -\(field == "address" ? " :" : "")",
                details: [field: "1 to \(max) of A-Z a-z 0-9 . _ -"]
            )
        }
    }
}
