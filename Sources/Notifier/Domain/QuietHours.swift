import Foundation

/// A daily span, in a time zone, in which pushes arrive silently.
struct QuietHours: Sendable, Hashable, Codable {
    /// Minutes after midnight.
    var start: Int
    var end: Int
    var timeZone: String
    /// Whether critical errors are silenced too.
    var includeCritical: Bool

    /// "HH:MM" as minutes after midnight, or nil.
    static func minutes(_ text: String) -> Int? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2, let hours = Int(parts[0]), let minutes = Int(parts[1]),
            (0..<24).contains(hours), (0..<60).contains(minutes)
        else { return nil }
        return hours * 60 + minutes
    }

    static func text(_ minutes: Int) -> String {
        String(format: "%02d:%02d", minutes / 60, minutes % 60)
    }

    /// Whether `date` falls in the span (start inclusive, end exclusive; a span may cross
    /// midnight; start == end is empty).
    func contains(_ date: Date) -> Bool {
        guard let zone = TimeZone(identifier: self.timeZone) else { return false }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        let now = (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
        if self.start <= self.end { return now >= self.start && now < self.end }
        return now >= self.start || now < self.end
    }
}
