/// The bulk lane's transactions as ingest's `/metrics` counts them (`ingest_transaction_events`,
/// a histogram of the events each transaction committed): how big ingest's group commits were
/// over a phase.
struct IngestTransactions: Sendable {
    var events: Double
    var transactions: Double

    /// The totals so far, or nil when `/metrics` cannot be read.
    static func read(_ url: String) async -> IngestTransactions? {
        guard let page = await MetricsPage.read(url), let events = page.value("ingest_transaction_events_sum", label: #"lane="bulk""#) else {
            return nil
        }
        return IngestTransactions(events: events, transactions: page.value("ingest_transaction_events_count", label: #"lane="bulk""#) ?? 0)
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
