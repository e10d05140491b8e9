import Foundation
import ServiceKit

/// A terminal session's id: its host's id and its tmux session name, `HOST.BASE64URL(NAME)`.
/// Opaque to clients, stable for as long as the session keeps its name, and decodable without a
/// table (the broker lists the host to check the session exists).
public struct TerminalSessionID: Sendable, Hashable, CustomStringConvertible {
    public var hostID: String
    public var name: String

    public var description: String {
        self.hostID + "." + Data(self.name.utf8).base64URLEncodedString()
    }

    public init(hostID: String, name: String) {
        self.hostID = hostID
        self.name = name
    }

    /// Parses an id; nil for anything that is not one (too long, no dot, bad base64, empty name).
    public init?(_ text: String) {
        guard text.utf8.count <= 256, let dot = text.firstIndex(of: ".") else { return nil }
        let host = String(text[..<dot])
        let encoded = text[text.index(after: dot)...]
        guard !host.isEmpty, host.utf8.allSatisfy(HostRegistration.isNameByte), !encoded.isEmpty else { return nil }
        guard let data = Data(base64URLEncoded: encoded), let name = String(data: data, encoding: .utf8), !name.isEmpty else { return nil }
        self.hostID = host
        self.name = name
    }
}
