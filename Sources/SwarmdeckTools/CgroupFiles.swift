import Foundation

/// What `/proc` says of cgroup v2: where the hierarchy is mounted and which cgroup a process is
/// in. The agent connector's command cgroup is made from it, and tests check it.
public enum CgroupFiles {
    /// Where the cgroup2 hierarchy is mounted, and which of its cgroups is that mount's root,
    /// from `/proc/<pid>/mountinfo` (the field after ` - ` is the file system type, the fourth
    /// the root, the fifth the mount point); nil when there is none, or its paths have
    /// characters the kernel escapes.
    public static func unifiedMount(mountInfo: String) -> (mountPoint: String, root: String)? {
        for line in mountInfo.split(separator: "\n") {
            let halves = line.components(separatedBy: " - ")
            guard halves.count == 2, halves[1].split(separator: " ").first == "cgroup2" else { continue }
            let fields = halves[0].split(separator: " ")
            guard fields.count >= 5, !fields[3].contains("\\"), !fields[4].contains("\\") else { continue }
            return (String(fields[4]), String(fields[3]))
        }
        return nil
    }

    /// The folder of cgroup `path` (as `/proc/<pid>/cgroup` names it) under the cgroup2 mount
    /// `mountInfo` shows; nil when there is none, or the mount does not reach it (a container's
    /// mount of another part of the hierarchy).
    public static func unifiedFolder(of path: String, mountInfo: String) -> String? {
        guard let (mountPoint, root) = Self.unifiedMount(mountInfo: mountInfo), path.hasPrefix("/") else { return nil }
        let below: Substring
        if root == "/" {
            below = path[...]
        } else if path == root || path.hasPrefix(root + "/") {
            below = path.dropFirst(root.count)
        } else {
            return nil
        }
        return mountPoint + (below == "/" ? "" : below)
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

    /// A key's value in the `cgroup.events` of the cgroup at `folder` (`populated`, `frozen`).
    public static func event(_ key: String, in folder: String) -> String? {
        guard let text = try? String(contentsOfFile: folder + "/cgroup.events", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == key { return String(parts[1]) }
        }
        return nil
    }

    /// The folder of the cgroup2 cgroup `pid` is in now, if any this process can reach.
    public static func unifiedFolder(of pid: Int32) -> String? {
        guard let mountInfo = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8),
            let path = Self.unifiedPath(of: pid)
        else { return nil }
        return Self.unifiedFolder(of: path, mountInfo: mountInfo)
    }

    /// The cgroup2 cgroup `pid` is in now, if any.
    public static func unifiedPath(of pid: Int32) -> String? {
        (try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8)).flatMap { Self.unifiedPath(cgroupFile: $0) }
    }
}
