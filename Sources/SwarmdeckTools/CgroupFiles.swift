import Foundation

/// What `/proc` says of cgroup v2: where the hierarchy is mounted and which cgroup a process is
/// in. The agent connector's command cgroup is made from it, and tests check it.
public enum CgroupFiles {
    /// Where the cgroup2 hierarchy is mounted, from `/proc/<pid>/mountinfo` (the field after
    /// ` - ` is the file system type, the fifth the mount point); nil when there is none, or
    /// its path has characters the kernel escapes.
    public static func unifiedMount(mountInfo: String) -> String? {
        for line in mountInfo.split(separator: "\n") {
            let halves = line.components(separatedBy: " - ")
            guard halves.count == 2, halves[1].split(separator: " ").first == "cgroup2" else { continue }
            let fields = halves[0].split(separator: " ")
            guard fields.count >= 5, !fields[4].contains("\\") else { continue }
            return String(fields[4])
        }
        return nil
    }

    /// A process's cgroup in the cgroup2 hierarchy, from `/proc/<pid>/cgroup` (its `0::`
    /// line); nil when it has none, or its cgroup was removed.
    public static func unifiedPath(cgroupFile: String) -> String? {
        for line in cgroupFile.split(separator: "\n") where line.hasPrefix("0::/") {
            let path = String(line.dropFirst(3))
            return path.hasSuffix(" (deleted)") ? nil : path
        }
        return nil
    }

    /// This host's cgroup2 mount point, if it has one.
    public static var unifiedMount: String? {
        (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)).flatMap { Self.unifiedMount(mountInfo: $0) }
    }

    /// The cgroup2 cgroup `pid` is in now, if any.
    public static func unifiedPath(of pid: Int32) -> String? {
        (try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8)).flatMap { Self.unifiedPath(cgroupFile: $0) }
    }
}
