/// The per-device rate limit: at most `limit` pushes in a window of `length` milliseconds that
/// starts with the first push; past it pushes fold into one summary sent when the window ends.
struct DeviceWindow: Sendable, Hashable {
    /// When the current window started (milliseconds), nil before the first push.
    var start: Int64?
    /// Pushes in it.
    var count: Int

    enum Decision: Sendable, Hashable {
        /// Push it; the window is now `window`.
        case send(DeviceWindow)
        /// Fold it into the summary sent at `at` (the window's end).
        case fold(at: Int64)
    }

    func decide(now: Int64, limit: Int, length: Int64) -> Decision {
        guard let start = self.start, now < start + length, now >= start else {
            return .send(DeviceWindow(start: now, count: 1))
        }
        if self.count < limit { return .send(DeviceWindow(start: start, count: self.count + 1)) }
        return .fold(at: start + length)
    }
}
