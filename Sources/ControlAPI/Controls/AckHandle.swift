import Crypto
import Foundation
import ServiceKit

/// The opaque handle an agent gets with each delivered command and sends back with its
/// acknowledgement: the delivery's JetStream acknowledgement subject, sealed (ChaCha20-Poly1305)
/// with a key derived from control-api's signing key and bound to the tenant, swarm, agent and
/// command. No NATS subject travels to the agent; a handle cannot be forged, altered, or used
/// for another command or agent; every replica can open every other's.
struct AckHandle: Sendable {
    private let key: SymmetricKey

    /// Derives the sealing key from `secret` (the signing key's PEM, shared by every replica).
    init(secret: some DataProtocol) {
        self.key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: Array(secret)),
            salt: Array("swarmdeck".utf8),
            info: Array("control-api ack handle v1".utf8),
            outputByteCount: 32
        )
    }

    private static func binding(tenant: String, swarm: String, agent: String, command: String) -> [UInt8] {
        Array([tenant, swarm, agent, command].joined(separator: "\u{0}").utf8)
    }

    /// The handle of `subject` for one command of one agent.
    func seal(_ subject: String, tenant: String, swarm: String, agent: String, command: String) throws -> String {
        let box = try ChaChaPoly.seal(
            Array(subject.utf8),
            using: self.key,
            authenticating: Self.binding(tenant: tenant, swarm: swarm, agent: agent, command: command)
        )
        return "ah1_" + box.combined.base64URLEncodedString()
    }

    /// The subject sealed in `handle`, or nil when it is not a handle this key sealed for
    /// exactly that tenant, swarm, agent and command.
    func open(_ handle: String, tenant: String, swarm: String, agent: String, command: String) -> String? {
        guard handle.hasPrefix("ah1_"), handle.utf8.count <= 1024, let combined = Data(base64URLEncoded: handle.dropFirst(4)),
            let box = try? ChaChaPoly.SealedBox(combined: combined),
            let plain = try? ChaChaPoly.open(
                box,
                using: self.key,
                authenticating: Self.binding(tenant: tenant, swarm: swarm, agent: agent, command: command)
            )
        else { return nil }
        return String(bytes: plain, encoding: .utf8)
    }
}
