import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOPosix
import ServiceKit

/// A researcher's page fetches (seed 001's `WebFetchService`): GET with a deadline, HTML
/// stripped to text, cut to a number of characters. Every hop (the URL, then each redirect, at
/// most 3) is resolved first and refused unless ``AddressPolicy`` allows every address
/// it resolves to; the request then goes to the address that was checked (the client's DNS is
/// pinned to it), so a name that resolves differently the second time cannot reach an internal
/// service. Bodies are read up to 2 MiB.
struct ResearchFetcher: Sendable {
    let policy: AddressPolicy
    let timeout: Duration
    let maxCharacters: Int
    let logger: Logger

    static let maxBodyBytes = 2 << 20
    static let maxRedirects = 3

    /// What became of `url`, and the page's text when it was fetched.
    func fetch(_ url: String) async -> (FetchRecord, String?) {
        let deadline = NIODeadline.now() + .nanoseconds(Int64(self.timeout.components.seconds) * 1_000_000_000)
        var current = url
        for _ in 0...Self.maxRedirects {
            guard let parsed = URL(string: current), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
                var host = parsed.host, !host.isEmpty
            else {
                return (FetchRecord(url: url, status: .refused, detail: "only http and https URLs with a host are fetched"), nil)
            }
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            let addresses: [String]
            do {
                addresses = try await AddressPolicy.resolve(host)
            } catch {
                return (FetchRecord(url: url, status: .failed, detail: "\(host) did not resolve"), nil)
            }
            guard let first = addresses.first else { return (FetchRecord(url: url, status: .failed, detail: "\(host) has no address"), nil) }
            if let refusal = addresses.lazy.compactMap({ self.policy.refusal($0) }).first {
                return (FetchRecord(url: url, status: .refused, detail: "\(host): \(refusal)"), nil)
            }
            var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
            configuration.dnsOverride = [host: first]
            configuration.timeout = .init(
                connect: .seconds(Int64(self.timeout.components.seconds)),
                read: .seconds(Int64(self.timeout.components.seconds))
            )
            let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
            let hop = await Self.get(current, client: client, deadline: deadline)
            try? await client.shutdown()
            switch hop {
            case .redirect(let location):
                guard let next = URL(string: location, relativeTo: parsed)?.absoluteString else {
                    return (FetchRecord(url: url, status: .failed, detail: "a redirect to an invalid location"), nil)
                }
                current = next
            case .page(let bytes):
                let text: String
                if let html = String(validating: bytes, as: UTF8.self) {
                    text = HTMLText.strip(html, maxCharacters: self.maxCharacters)
                } else {
                    text = "(Could not decode page content)"
                }
                return (FetchRecord(url: url, status: .fetched, characters: text.count), text)
            case .failed(let detail):
                return (FetchRecord(url: url, status: .failed, detail: detail), nil)
            }
        }
        return (FetchRecord(url: url, status: .failed, detail: "more than \(Self.maxRedirects) redirects"), nil)
    }

    enum Hop {
        case redirect(String)
        case page([UInt8])
        case failed(String)
    }

    /// One GET: a redirect's location, the page's bytes, or what went wrong.
    private static func get(_ url: String, client: HTTPClient, deadline: NIODeadline) async -> Hop {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "User-Agent", value: "AgentOS/1.0")
        do {
            let response = try await client.execute(request, deadline: deadline)
            if (300..<400).contains(response.status.code), let location = response.headers.first(name: "location") {
                return .redirect(location)
            }
            guard (200..<300).contains(response.status.code) else { return .failed("HTTP \(response.status.code)") }
            var body = try await response.body.collect(upTo: Self.maxBodyBytes)
            return .page(body.readBytes(length: body.readableBytes) ?? [])
        } catch is NIOTooManyBytesError {
            return .failed("the page is over \(Self.maxBodyBytes) bytes")
        } catch {
            return .failed(String("\(type(of: error)): \(error)".prefix(300)))
        }
    }

}
