import Foundation
import SwarmdeckTools

/// A cgroup v2 of the command's own, where the host lets the connector make one: a cgroup2
/// hierarchy the connector may write below its own cgroup, with `cgroup.freeze` (Linux 5.2)
/// and `cgroup.kill` (5.14). The command enters it before it runs (``ChildProcess`` starts it
/// through a shell that writes itself into `cgroup.procs`, then execs), so everything it
/// starts is born in it, wherever it goes in the process tree: pausing freezes all of it at
/// once, terminating kills all of it at once, and none of it is missed between a listing and
/// a signal. The connector stays the command's subreaper too; where there is no cgroup (a
/// cgroup v1 host, a user without a delegated subtree) that is all it has.
final class CommandCgroup: Sendable {
    /// The cgroup's folder.
    let path: String
    /// Its path within the hierarchy (as `/proc/<pid>/cgroup` names it).
    let name: String

    private init(path: String, name: String) {
        self.path = path
        self.name = name
    }

    /// Makes an empty cgroup named `leaf` below this process's own, or nil where the host does
    /// not allow it.
    static func make(leaf: String) -> CommandCgroup? {
        guard let mount = CgroupFiles.unifiedMount, let own = CgroupFiles.unifiedPath(of: getpid()) else { return nil }
        let parent = mount + (own == "/" ? "" : own)
        Self.removeAbandoned(in: parent)
        let name = (own == "/" ? "" : own) + "/" + leaf
        let cgroup = CommandCgroup(path: mount + name, name: name)
        guard mkdir(cgroup.path, 0o755) == 0 else { return nil }
        for file in ["cgroup.procs", "cgroup.freeze", "cgroup.kill"] where access(cgroup.path + "/" + file, W_OK) != 0 {
            cgroup.remove()
            return nil
        }
        return cgroup
    }

    /// Removes the empty cgroups that connectors no longer running left in `parent` (one killed
    /// before it could): named `swarmdeck-command-<pid>-…` after a pid that is gone. The kernel
    /// refuses to remove one a process is still in.
    private static func removeAbandoned(in parent: String) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: parent) else { return }
        for entry in entries where entry.hasPrefix("swarmdeck-command-") {
            let fields = entry.split(separator: "-")
            guard fields.count == 4, let pid = pid_t(fields[2]), Foundation.kill(pid, 0) != 0, errno == ESRCH else { continue }
            rmdir(parent + "/" + entry)
        }
    }

    /// The processes in it now.
    var members: [pid_t] {
        guard let text = try? String(contentsOfFile: self.path + "/cgroup.procs", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { pid_t($0) }
    }

    /// Freezes every process in it (`cgroup.freeze`) and waits, at most `timeout`, until the
    /// kernel says they are; answers whether it did.
    func freeze(within timeout: Duration = .seconds(2)) async -> Bool {
        guard self.write("1", to: "cgroup.freeze") else { return false }
        let deadline = ContinuousClock.now + timeout
        while self.event("frozen") != "1" {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// Thaws what ``freeze(within:)`` froze.
    @discardableResult
    func thaw() -> Bool {
        self.write("0", to: "cgroup.freeze")
    }

    /// SIGKILL to every process in it at once (`cgroup.kill`), frozen ones included.
    @discardableResult
    func kill() -> Bool {
        self.write("1", to: "cgroup.kill")
    }

    /// Removes it (the kernel refuses while a process is in it).
    @discardableResult
    func remove() -> Bool {
        rmdir(self.path) == 0
    }

    private func event(_ key: String) -> String? {
        guard let text = try? String(contentsOfFile: self.path + "/cgroup.events", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == key { return String(parts[1]) }
        }
        return nil
    }

    private func write(_ value: String, to file: String) -> Bool {
        let fd = open(self.path + "/" + file, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return Array(value.utf8).withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) } == value.utf8.count
    }
}
