import AsyncHTTPClient
import NIOCore

/// The bulk lane's transactions as ingest's `/metrics` counts them (`ingest_transaction_events`,
/// a histogram of the events each transaction committed): how big ingest's group commits were
/// over a phase.
struct IngestTransactions: Sendable {
    var events: Double
    var transactions: Double

    /// The totals so far, or nil when `/metrics` cannot be read.
    static func read(_ url: String) async -> IngestTransactions? {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        guard let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(10)), response.status == .ok,
            let body = try? await response.body.collect(upTo: 16 << 20)
        else { return nil }
        var totals = IngestTransactions(events: 0, transactions: 0)
        var found = false
        for line in String(buffer: body).split(separator: "\n") where line.contains(#"lane="bulk""#) {
            guard let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
            if line.hasPrefix("ingest_transaction_events_sum") {
                totals.events = value
                found = true
            } else if line.hasPrefix("ingest_transaction_events_count") {
                totals.transactions = value
            }
        }
        return found ? totals : nil
    }

    /// What a phase added, as a sentence.
    static func describe(from before: IngestTransactions?, to after: IngestTransactions?) -> String {
        guard let before, let after, after.transactions > before.transactions else {
            return "events per transaction: unknown (ingest's /metrics not read; --metrics-url)"
        }
        let transactions = after.transactions - before.transactions
        return String(
            format: "bulk lane: %.0f transactions, %.1f events per transaction on average",
            transactions,
            (after.events - before.events) / transactions
        )
    }
}
