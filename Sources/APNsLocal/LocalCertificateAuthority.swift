import Crypto
public import Foundation
import SwiftASN1
import X509

/// A certificate authority minted at start, and a server certificate it signs for `localhost`
/// and `127.0.0.1`: what the local APNs server serves, and the CA its clients are told to
/// trust (`notifier.apns.ca-file`). Nothing of it is ever committed; it lives as long as the
/// server, or in the folder the server is told to keep it in.
public struct LocalCertificateAuthority: Sendable {
    /// The CA's certificate in PEM: what a client trusts.
    public let certificateAuthorityPEM: String
    /// The server's certificate in PEM.
    public let serverCertificatePEM: String
    /// The server's private key in PEM.
    public let serverKeyPEM: String

    /// Mints a CA (valid a year) and a server certificate for `hosts` (DNS names or IPv4
    /// addresses).
    public init(hosts: [String] = ["localhost", "127.0.0.1"], now: Date = Date()) throws {
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            OrganizationName("Swarmdeck")
            CommonName("Swarmdeck local APNs CA")
        }
        let notBefore = now.addingTimeInterval(-3600)
        let notAfter = now.addingTimeInterval(365 * 86400)
        let ca = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(caKey.publicKey),
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: caName,
            subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )
        let serverKey = P256.Signing.PrivateKey()
        let names: [GeneralName] = hosts.map { host in
            if let octets = Self.ipv4(host) { return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(octets))) }
            return .dnsName(host)
        }
        let server = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(serverKey.publicKey),
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: caName,
            subject: try DistinguishedName { CommonName(hosts.first ?? "localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey)
        )
        self.certificateAuthorityPEM = try ca.serializeAsPEM().pemString
        self.serverCertificatePEM = try server.serializeAsPEM().pemString
        self.serverKeyPEM = serverKey.pemRepresentation
    }

    private static func ipv4(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        let octets = parts.compactMap { UInt8($0) }
        return octets.count == 4 ? octets : nil
    }
}
