/// Where the page before an answer of an agent's events starts: at the oldest event answered,
/// when older ones may exist (the read was full, or the bytes cut it short). Apart from I/O so
/// its cases are unit-tested.
enum AgentEventsPage {
    /// - Parameters:
    ///   - oldest: the oldest seq answered (nil: none).
    ///   - answered: how many were answered.
    ///   - read: how many the limit let through, before the bytes cut.
    ///   - limit: how many were asked for.
    static func nextBefore(oldest: Int64?, answered: Int, read: Int, limit: Int) -> Int64? {
        guard let oldest, answered < read || read >= limit else { return nil }
        return oldest
    }
}
