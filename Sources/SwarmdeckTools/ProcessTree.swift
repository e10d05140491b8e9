import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The processes of this host as `/proc` shows them, and the descendants of one of them: how the
/// agent connector finds every process its command started, orphans it adopted included (it is
/// their subreaper), whatever process group or session they moved to.
public enum ProcessTree {
    /// One process: its parent and its state letter (`R`, `S`, `T` stopped, `Z` zombie…).
    public struct Entry: Sendable, Equatable {
        public var parent: Int32
        public var state: Character

        public init(parent: Int32, state: Character) {
            self.parent = parent
            self.state = state
        }
    }

    /// Every process's parent and state.
    public static func table() -> [Int32: Entry] {
        var table: [Int32: Entry] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(name), let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                let entry = Self.entry(stat: stat)
            else { continue }
            table[pid] = entry
        }
        return table
    }

    /// The parent and state in a `/proc/<pid>/stat` line (the command's name, in parentheses,
    /// may hold spaces and parentheses: the fields start after the last `)`).
    public static func entry(stat: String) -> Entry? {
        guard let fields = Self.fields(stat: stat), fields.count > 2, let state = fields[0].first, let parent = Int32(fields[1]) else {
            return nil
        }
        return Entry(parent: parent, state: state)
    }

    /// The fields of a `stat` line after the command's name, from the 3rd (the state) on.
    private static func fields(stat: String) -> [Substring]? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ")
    }

    /// The descendants of `root` in `table`, with their states.
    public static func descendants(of root: Int32, in table: [Int32: Entry]) -> [Int32: Character] {
        var children: [Int32: [Int32]] = [:]
        for (pid, entry) in table { children[entry.parent, default: []].append(pid) }
        var found: [Int32: Character] = [:]
        var frontier = [root]
        while let next = frontier.popLast() {
            for pid in children[next] ?? [] where found[pid] == nil && pid != root {
                found[pid] = table[pid]?.state
                frontier.append(pid)
            }
        }
        return found
    }

    /// The descendants of `root` now.
    public static func descendants(of root: Int32) -> [Int32: Character] {
        Self.descendants(of: root, in: Self.table())
    }

    /// The state letter of `pid`, or nil when there is no such process.
    public static func state(of pid: Int32) -> Character? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return nil }
        return Self.entry(stat: stat)?.state
    }

    /// Whether `pid` still exists (a zombie counts as gone).
    public static func alive(_ pid: Int32) -> Bool {
        (Self.state(of: pid) ?? "Z") != "Z"
    }

    /// When a process started, in clock ticks after boot (the 22nd field of its `stat` line):
    /// with its pid, what names one process for good (a pid is reused, the pair is not).
    public static func startTime(stat: String) -> UInt64? {
        // The 22nd field is the 20th of those after the name.
        guard let fields = Self.fields(stat: stat), fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }

    /// When `pid` started, or nil when there is no such process.
    public static func startTime(of pid: Int32) -> UInt64? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return nil }
        return Self.startTime(stat: stat)
    }
}
