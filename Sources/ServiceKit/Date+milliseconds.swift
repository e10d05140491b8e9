public import Foundation

extension Date {
    /// Now, to the millisecond (what Postgres, the cursors and the frames all hold exactly).
    public static var nowMilliseconds: Date {
        Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }

    /// Milliseconds since the epoch, as frames and notices carry times.
    public var milliseconds: Int64 { Int64((self.timeIntervalSince1970 * 1000).rounded(.down)) }

    /// The time `milliseconds` after the epoch.
    public init(milliseconds: Int64) {
        self.init(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
    }
}
