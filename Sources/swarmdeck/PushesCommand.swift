import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import SwarmdeckTools

/// `swarmdeck pushes`: what the local APNs server (apns-local) received, oldest first.
struct PushesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushes",
        abstract: "List the pushes the local APNs server received (the local stack runs it)."
    )

    @Option(help: "The local APNs server (default: $SWARMDECK_APNS_URL or https://127.0.0.1:9443).")
    var url: String?

    @Option(help: "Its CA certificate (default: $SWARMDECK_APNS_CA_FILE; the local stack's .swarmdeck/local.env sets both).")
    var caFile: String?

    @Option(help: "The file holding its control token (default: $SWARMDECK_APNS_CONTROL_TOKEN_FILE, else control-token beside the CA file).")
    var controlTokenFile: String?

    @Option(help: "Only pushes after this index.")
    var after = 0

    @Option(help: "At most this many.")
    var limit = 100

    @Flag(help: "Keep printing pushes as they arrive.")
    var follow = false

    /// One push as apns-local reports it.
    struct Push: Decodable {
        var index: Int
        var receivedAt: Int64
        var deviceToken: String
        var collapseID: String?
        var payload: String
        var status: Int
        var reason: String?
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let url = self.url ?? environment["SWARMDECK_APNS_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? "https://127.0.0.1:9443"
        guard let caFile = self.caFile ?? environment["SWARMDECK_APNS_CA_FILE"], !caFile.isEmpty else {
            throw ValidationError("give --ca-file or set SWARMDECK_APNS_CA_FILE (source .swarmdeck/local.env)")
        }
        let token: String
        do {
            token = try APNsLocalControlToken.read(file: self.controlTokenFile, caFile: caFile, environment: environment)
        } catch {
            throw ValidationError("\(error)")
        }
        let http = ClientTrust.httpClient(caFile: caFile)
        do {
            try await self.list(http, url: url, token: token)
            try await http.shutdown()
        } catch {
            try? await http.shutdown()
            throw error
        }
    }

    private func list(_ http: HTTPClient, url: String, token: String) async throws {
        var after = self.after
        repeat {
            var request = HTTPClientRequest(url: url + "/_local/pushes?after=\(after)&limit=\(min(max(self.limit, 1), 10_000))")
            request.method = .GET
            request.headers.add(name: "authorization", value: "Bearer " + token)
            let response = try await http.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 64 << 20)
            guard response.status == .ok else { throw ValidationError("\(url) answered \(response.status)") }
            struct Page: Decodable { var pushes: [Push] }
            let page = try JSONDecoder().decode(Page.self, from: Data(buffer: body))
            for push in page.pushes { print(Self.line(push)) }
            after = page.pushes.last?.index ?? after
            if self.follow { try await Task.sleep(for: .seconds(1)) }
        } while self.follow
    }

    static func line(_ push: Push) -> String {
        let at = Date(timeIntervalSince1970: Double(push.receivedAt) / 1000).ISO8601Format(.iso8601.time(includingFractionalSeconds: true))
        let payload = (try? JSONSerialization.jsonObject(with: Data(push.payload.utf8))) as? [String: Any] ?? [:]
        let alert = (payload["aps"] as? [String: Any])?["alert"] as? [String: Any] ?? [:]
        let text = [alert["title"] as? String, alert["body"] as? String].compactMap { $0 }.joined(separator: ": ")
        let status = push.reason.map { "\(push.status) \($0)" } ?? String(push.status)
        return
            "#\(push.index) \(at) …\(push.deviceToken.suffix(8)) \(status) [\(push.collapseID ?? "-")] \(payload["type"] as? String ?? "?") \(text)"
    }
}
