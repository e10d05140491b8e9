import Foundation

extension Date {
    /// Now, to the millisecond (what Postgres, the cursors and the frames all hold exactly).
    static var nowMilliseconds: Date {
        Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }

    /// Milliseconds since the epoch, as frames and notices carry times.
    var milliseconds: Int64 { Int64((self.timeIntervalSince1970 * 1000).rounded(.down)) }
}
