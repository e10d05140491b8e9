import Crypto
import Foundation
import NIOSSH

/// One SSH key pair per tenant, derived from the broker's key, so a host that lets one tenant's
/// broker in lets no other tenant's: the seed of tenant T's Ed25519 key is
/// HMAC-SHA256(the broker key's seed, "swarmdeck terminal-broker tenant key v1" 0x00 T).
///
/// Derived, not stored: every replica computes the same key, nothing secret is kept in
/// Postgres, and a new broker key changes every tenant's key at once. A tenant's administrator
/// reads the public half (`GET /v1/terminal/ssh-key`) and lists it in `authorized_keys`.
public struct TenantSSHKeys: Sendable {
    private let masterSeed: SymmetricKey

    static let label = Array("swarmdeck terminal-broker tenant key v1".utf8) + [0]

    init(brokerKey: OpenSSHPrivateKey) {
        self.masterSeed = SymmetricKey(data: brokerKey.seed)
    }

    /// The keys derived from the broker's key file (its text).
    public init(brokerKeyText: String) throws {
        self.init(brokerKey: try OpenSSHPrivateKey(openSSH: brokerKeyText))
    }

    /// The tenant's private key as an OpenSSH key file, for a tool that logs in as the broker
    /// would for that tenant (`swarmdeck-bench terminal`'s plain-ssh baseline).
    public func privateKeyText(tenant: String) -> String {
        let key = self.privateKey(tenant: tenant)
        return OpenSSHPrivateKey(
            seed: Array(key.rawRepresentation),
            publicKey: Array(key.publicKey.rawRepresentation),
            comment: "swarmdeck-\(tenant)"
        ).openSSHText
    }

    /// The tenant's private key.
    func privateKey(tenant: String) -> Curve25519.Signing.PrivateKey {
        let seed = HMAC<SHA256>.authenticationCode(for: Self.label + Array(tenant.utf8), using: self.masterSeed)
        // A 32-byte seed is always a valid Ed25519 private key.
        return try! Curve25519.Signing.PrivateKey(rawRepresentation: Data(seed))
    }

    /// The tenant's public key as an `authorized_keys` line (`ssh-ed25519 AAAA… swarmdeck-<tenant>`).
    public func publicKeyLine(tenant: String) -> String {
        String(openSSHPublicKey: NIOSSHPrivateKey(ed25519Key: self.privateKey(tenant: tenant)).publicKey) + " swarmdeck-\(tenant)"
    }

    /// The public key's fingerprint as `ssh-keygen -l` shows it (`SHA256:…`, unpadded base64).
    func fingerprint(tenant: String) -> String {
        let blob = self.publicKeyLine(tenant: tenant).split(separator: " ")[1]
        let digest = SHA256.hash(data: Data(base64Encoded: String(blob)) ?? Data())
        return "SHA256:" + Data(digest).base64EncodedString().replacingOccurrences(of: "=", with: "")
    }
}
