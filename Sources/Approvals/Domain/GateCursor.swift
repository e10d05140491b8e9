import Foundation

/// Where a page of gates ends (newest first): the last gate's request time and id, opaque to
/// the client (`c1_<microseconds>_<gateId>`).
struct GateCursor: Sendable, Equatable {
    var requestedAt: Date
    var gateID: String

    init(requestedAt: Date, gateID: String) {
        self.requestedAt = requestedAt
        self.gateID = gateID
    }

    init?(_ text: String) {
        let parts = text.split(separator: "_", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "c1", let micros = Int64(parts[1]), micros >= 0, !parts[2].isEmpty, parts[2].utf8.count <= 64
        else { return nil }
        self.requestedAt = Date(timeIntervalSince1970: TimeInterval(micros) / 1e6)
        self.gateID = String(parts[2])
    }

    var text: String {
        "c1_\(Int64((self.requestedAt.timeIntervalSince1970 * 1e6).rounded()))_\(self.gateID)"
    }
}
