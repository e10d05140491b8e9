import APNsLocal
import ArgumentParser
import Crypto
import Foundation
import Logging
import ServiceKit

/// `apns-local`: the local APNs server (``APNsLocalServer``) as a process, for the local stack.
@main
struct Main: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-local",
        abstract: "A local APNs server: HTTP/2 over TLS with its own CA, provider tokens and pushes checked as APNs does."
    )

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on.")
    var port = 9443

    @Option(help: "A folder for the CA it mints (ca.pem, which clients trust: notifier.apns.ca-file).")
    var dir: String

    @Option(help: "A provider key whose tokens are accepted: KEYID:TEAMID:PATH (the .p8 file or its public key in PEM); repeatable.")
    var key: [String] = []

    @Option(help: "A topic (bundle id) accepted; any when none is given; repeatable.")
    var topic: [String] = []

    @Option(help: "Another DNS name its certificate holds besides localhost and 127.0.0.1 (its compose service name); repeatable.")
    var name: [String] = []

    @Option(
        help: "A file holding the bearer token its control paths (/_local/…) ask for; default: a new one written to DIR/control-token (mode 0600)."
    )
    var controlTokenFile: String?

    func run() async throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        let logger = Logger(label: "apns-local")
        var keys: [APNsLocalKey] = []
        for spec in self.key {
            let parts = spec.split(separator: ":", maxSplits: 2).map(String.init)
            guard parts.count == 3 else { throw ValidationError("--key takes KEYID:TEAMID:PATH") }
            let pem = try String(contentsOfFile: parts[2], encoding: .utf8)
            let publicKey: P256.Signing.PublicKey
            if let privateKey = try? P256.Signing.PrivateKey(pemRepresentation: pem) {
                publicKey = privateKey.publicKey
            } else {
                publicKey = try P256.Signing.PublicKey(pemRepresentation: pem)
            }
            keys.append(APNsLocalKey(keyID: parts[0], teamID: parts[1], publicKey: publicKey))
        }
        guard !keys.isEmpty else { throw ValidationError("give at least one --key") }
        let authority = try LocalCertificateAuthority(hosts: ["localhost", "127.0.0.1"] + self.name)
        try FileManager.default.createDirectory(atPath: self.dir, withIntermediateDirectories: true)
        try authority.certificateAuthorityPEM.write(toFile: self.dir + "/ca.pem", atomically: true, encoding: .utf8)
        let controlToken: String
        if let file = self.controlTokenFile {
            controlToken = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            guard controlToken.utf8.count >= 16 else { throw ValidationError("\(file) holds no token of 16 characters or more") }
        } else {
            controlToken = randomHex(bytes: 32)
            let path = self.dir + "/control-token"
            try? FileManager.default.removeItem(atPath: path)
            guard FileManager.default.createFile(atPath: path, contents: Data(controlToken.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw ValidationError("cannot write \(path)")
            }
        }
        let server = APNsLocalServer(
            configuration: .init(
                host: self.host,
                port: self.port,
                keys: keys,
                topics: Set(self.topic),
                authority: authority,
                controlToken: controlToken
            ),
            logger: logger
        )
        _ = try await server.start()
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
