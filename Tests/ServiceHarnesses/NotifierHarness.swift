import APNs
public import APNsLocal
public import Contracts
import Crypto
import Foundation
import Hummingbird
public import HummingbirdTesting
import Logging
import Notifier
public import ServiceKit
public import TestSupport
import Testing

/// The notifier against the test NATS and Postgres (``LiveHarness``) and a local APNs server
/// in process, which trusts the notifier's provider key and which the notifier trusts.
public struct NotifierHarness: Sendable {
    public typealias JSON = [String: Any]

    public static let keyID = "KEY1234567"
    public static let teamID = "TEAM123456"
    public static let topic = "dev.swarmdeck.app"

    public var live: LiveHarness
    public let apns: APNsLocalServer
    public let apnsURL: String
    public let files: [String: String]

    public var tenant: String { self.live.tenant }

    public static func start(_ overrides: [String: String] = [:]) async throws -> NotifierHarness {
        let key = P256.Signing.PrivateKey()
        let authority = try LocalCertificateAuthority()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("swarmdeck-apns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let keyFile = folder.appendingPathComponent("AuthKey.p8").path
        let caFile = folder.appendingPathComponent("ca.pem").path
        try key.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        try authority.certificateAuthorityPEM.write(toFile: caFile, atomically: true, encoding: .utf8)
        let apns = APNsLocalServer(
            configuration: .init(
                keys: [APNsLocalKey(keyID: Self.keyID, teamID: Self.teamID, publicKey: key.publicKey)],
                topics: [Self.topic],
                authority: authority
            ),
            logger: Logger(label: "apns-local")
        )
        let port = try await apns.start()
        let url = "https://localhost:\(port)"
        var environment = [
            "NOTIFIER_SCHEMA": TestEnvironment.uniqueName("ntf"),
            "NOTIFIER_APNS_URL": url,
            "NOTIFIER_APNS_KEY_FILE": keyFile,
            "NOTIFIER_APNS_KEY_ID": Self.keyID,
            "NOTIFIER_APNS_TEAM_ID": Self.teamID,
            "NOTIFIER_APNS_TOPIC": Self.topic,
            "NOTIFIER_APNS_CA_FILE": caFile,
            "NOTIFIER_BACKOFF_BASE_MS": "100",
            "NOTIFIER_BACKOFF_CAP_MS": "1000",
        ]
        environment.merge(overrides) { $1 }
        return NotifierHarness(live: try await LiveHarness(overrides: environment), apns: apns, apnsURL: url, files: ["key": keyFile, "ca": caFile])
    }

    public func stop() async throws {
        try await self.apns.stop()
    }

    /// The notifier in process: `body` gets its test client.
    @discardableResult
    public func run<Value: Sendable>(
        _ mode: TestingSetup = .router,
        _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Value
    ) async throws -> Value {
        try await self.live.application(NotifierService.self).test(mode) { notifier in
            try await body(notifier)
        }
    }

    public func token(tenant: String? = nil, device: String) async throws -> String {
        try await self.live.token(tenant: tenant, subject: device, scopes: [.streamRead])
    }

    public static func apnsToken(_ n: Int) -> String { String(format: "%064x", n) }

    /// Registers `device` with APNs token number `n`; answers the device's access token.
    @discardableResult
    public func register(
        _ notifier: any TestClientProtocol,
        device: String,
        token n: Int,
        tenant: String? = nil,
        environment: String = "sandbox"
    ) async throws
        -> String
    {
        let access = try await self.token(tenant: tenant, device: device)
        let (status, body) = try await LiveCall.call(
            notifier,
            .put,
            "/v1/devices/me/push",
            token: access,
            json: ["apnsToken": Self.apnsToken(n), "environment": environment, "topic": Self.topic]
        )
        #expect(status == .ok, "registering \(device): \(status) \(body)")
        return access
    }

    /// A NATS connection and JetStream for publishing notices as health-monitor and approvals do.
    public func publisher() async throws -> (NATSConnection, JetStream, Subjects) {
        let nats = try await NATSConnection.connect(NATSConfiguration(servers: [try TestEnvironment.natsURL], name: "notice-publisher"))
        // Small, as the services' own in tests (LiveHarness): JetStream reserves a stream's bound.
        let jetStream = JetStream(connection: nats, noticeStreamMaxBytes: 4 << 20)
        let subjects = try Subjects(prefix: self.live.prefix)
        try await jetStream.prepareNoticeStream(name: subjects.incidentStreamName, subject: subjects.allIncidentChanges)
        try await jetStream.prepareNoticeStream(name: subjects.gateStreamName, subject: subjects.allGateOpenings)
        return (nats, jetStream, subjects)
    }

    /// Publishes an incident change as health-monitor does.
    public static func publishIncident(
        _ jetStream: JetStream,
        _ subjects: Subjects,
        tenant: String,
        id: String,
        rule: String = "context_near_capacity",
        status: String = "firing",
        swarm: String = "checkout"
    ) async throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let notice = IncidentNotice(
            tenant: tenant,
            incidentId: id,
            rule: rule,
            status: status,
            severity: "warning",
            summary: "Session s of a1 is at 95% of its context window",
            swarmId: swarm,
            agentId: "a1",
            firedAt: now,
            resolvedAt: status == "resolved" ? now : nil,
            webUrl: "http://localhost:8080/incidents/\(id)"
        )
        _ = try await jetStream.publish(
            Array(try JSONEncoder().encode(notice)),
            to: subjects.incidentChanged(tenant: tenant),
            messageID: "incident-\(id)-\(status)"
        )
    }

    /// Waits until the APNs server has `count` pushes matching `filter`, or `seconds` pass.
    public func waitForPushes(_ count: Int, seconds: Double = 20, _ filter: (APNsLocalPush) -> Bool = { _ in true }) async throws -> [APNsLocalPush] {
        let deadline = Date().addingTimeInterval(seconds)
        var pushes = self.apns.received().filter(filter)
        while pushes.count < count, Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
            pushes = self.apns.received().filter(filter)
        }
        return pushes
    }

    public static func payload(_ push: APNsLocalPush) -> JSON {
        (try? JSONSerialization.jsonObject(with: Data(push.payload.utf8))) as? JSON ?? [:]
    }
}
