import Foundation

/// The context window of a model, from a configurable table (`health.context-windows`):
/// entries `pattern=tokens`, the first whose pattern the model name contains wins, else the
/// default (200K). The default table gives 1M to models run with the 1M-context beta (Claude
/// Code names them with a `[1m]` suffix).
struct ModelWindows: Sendable, Equatable {
    var entries: [(pattern: String, tokens: Int64)]
    var defaultWindow: Int64

    static let defaultTable = "[1m]=1000000,-1m=1000000"

    /// Parses `pattern=tokens,…`; nil when an entry is malformed.
    init?(table: String, defaultWindow: Int64) {
        var entries: [(String, Int64)] = []
        for entry in table.split(separator: ",") {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            let pattern = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
            guard !pattern.isEmpty, let tokens = Int64(parts[1].trimmingCharacters(in: .whitespaces)), tokens > 0 else { return nil }
            entries.append((pattern, tokens))
        }
        self.entries = entries
        self.defaultWindow = defaultWindow
    }

    /// The entries as `pattern=tokens,…`, as ``init(table:defaultWindow:)`` reads them.
    var table: String {
        self.entries.map { "\($0.pattern)=\($0.tokens)" }.joined(separator: ",")
    }

    func window(for model: String?) -> Int64 {
        guard let model = model?.lowercased(), !model.isEmpty else { return self.defaultWindow }
        return self.entries.first { model.contains($0.pattern) }?.tokens ?? self.defaultWindow
    }

    static func == (lhs: ModelWindows, rhs: ModelWindows) -> Bool {
        lhs.defaultWindow == rhs.defaultWindow && lhs.entries.elementsEqual(rhs.entries) { $0.pattern == $1.pattern && $0.tokens == $1.tokens }
    }
}
