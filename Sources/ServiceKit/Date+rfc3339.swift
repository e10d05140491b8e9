public import Foundation

extension Date {
    /// An RFC 3339 time as the services write it, with or without fractional seconds; nil for
    /// anything else.
    public init?(rfc3339 text: String) {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) {
            self = date
            return
        }
        formatter.formatOptions = [.withInternetDateTime]
        guard let date = formatter.date(from: text) else { return nil }
        self = date
    }

    /// The time in RFC 3339, UTC, with milliseconds and its zone: `2025-09-06T20:15:43.512Z`.
    public var rfc3339Milliseconds: String {
        self.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }
}
