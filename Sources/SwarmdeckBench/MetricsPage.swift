import AsyncHTTPClient
import NIOCore

/// A service's `/metrics` (Prometheus text) as the benches read it: fetched once, then values
/// by name and label.
struct MetricsPage: Sendable {
    let lines: [Substring]

    init(_ text: String) {
        self.lines = text.split(separator: "\n")
    }

    /// `url`'s page; throws when it cannot be read.
    static func fetch(_ url: String, http: HTTPClient = .shared) async throws -> MetricsPage {
        let response = try await http.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
        return MetricsPage(String(buffer: try await response.body.collect(upTo: 16 << 20)))
    }

    /// `url`'s page, or nil when it cannot be read.
    static func read(_ url: String) async -> MetricsPage? {
        try? await Self.fetch(url)
    }

    /// The first value of `name` (with any labels, or with `label`, e.g. `lane="bulk"`, among
    /// them), or nil when there is none (a counter appears with its first increment).
    func value(_ name: String, label: String? = nil) -> Double? {
        for line in self.lines where line.hasPrefix(name + " ") || line.hasPrefix(name + "{") {
            if let label, !line.contains(label) { continue }
            if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { return value }
        }
        return nil
    }
}
