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
}
