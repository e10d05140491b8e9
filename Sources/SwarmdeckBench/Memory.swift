/// A process's memory, as the benches report it.
enum Memory {
    /// The resident set of process `pid` (VmRSS), in bytes; 0 when it cannot be read.
    static func rss(_ pid: Int32) -> Int {
        guard pid > 0, let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
        }
        return 0
    }
}
