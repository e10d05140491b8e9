public import Foundation

/// Where a page of a newest-first list ends: the last item's time and id, opaque to the client
/// (`c1_<microseconds>_<id>`). Approvals pages gates by it, health-monitor incidents.
public struct PageCursor: Sendable, Equatable {
    public var at: Date
    public var id: String

    public init(at: Date, id: String) {
        self.at = at
        self.id = id
    }

    /// A cursor's text; nil when it is not one.
    public init?(_ text: String) {
        let parts = text.split(separator: "_", maxSplits: 2, omittingEmptySubsequences: false)
        // Up to the year 9999; an id of printable ASCII, as our ids are.
        guard parts.count == 3, parts[0] == "c1", let micros = Int64(parts[1]), (0...253_402_300_799_000_000).contains(micros), !parts[2].isEmpty,
            parts[2].utf8.count <= 64, parts[2].utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { return nil }
        self.at = Date(timeIntervalSince1970: TimeInterval(micros) / 1e6)
        self.id = String(parts[2])
    }

    public var text: String {
        "c1_\(Int64((self.at.timeIntervalSince1970 * 1e6).rounded()))_\(self.id)"
    }
}
