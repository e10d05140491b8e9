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
        // Up to the year 9999; a gate id of the characters gate ids have.
        guard parts.count == 3, parts[0] == "c1", let micros = Int64(parts[1]), (0...253_402_300_799_000_000).contains(micros), !parts[2].isEmpty,
            parts[2].utf8.count <= 64, parts[2].utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { return nil }
        self.requestedAt = Date(timeIntervalSince1970: TimeInterval(micros) / 1e6)
        self.gateID = String(parts[2])
    }

    var text: String {
        "c1_\(Int64((self.requestedAt.timeIntervalSince1970 * 1e6).rounded()))_\(self.gateID)"
    }
}
