import Foundation
import SwarmdeckTools

/// A cgroup v2 of the command's own, where the host lets the connector make one: a cgroup2
/// hierarchy the connector may write below its own cgroup, with `cgroup.freeze` (Linux 5.2)
/// and `cgroup.kill` (5.14). The command is born in it: the connector moves itself in, starts
/// the command, and moves itself back (``ChildProcess`` does; this glibc has no
/// `posix_spawnattr_setcgroup_np`), so the command's environment and start are what they are
/// without a cgroup, and a refused move is known at once. Everything the command starts is
/// then in it: pausing freezes all of it at once, what no signal reached included (a setuid
/// program), and terminating kills all of it at once, with no pid read from a listing. The
/// connector stays the command's subreaper too; where there is no cgroup (a cgroup v1 host, a
/// user without a delegated subtree) that is all it has.
final class CommandCgroup: Sendable {
    /// The cgroup's folder.
    let path: String
    /// The `cgroup.procs` of the connector's own cgroup, where it moves itself back.
    private let home: String

    private init(path: String, home: String) {
        self.path = path
        self.home = home
    }

    /// Makes an empty cgroup below this process's own, named after this process (its pid and
    /// start time, so that a later connector knows when it is gone), or nil where the host does
    /// not allow it. First, cgroups that connectors no longer running left there are emptied
    /// and removed.
    static func make() -> CommandCgroup? {
        let me = getpid()
        guard let parent = CgroupFiles.unifiedFolder(of: me), let started = ProcessTree.startTime(of: me) else { return nil }
        Self.removeAbandoned(in: parent)
        let cgroup = CommandCgroup(
            path: parent + "/swarmdeck-command-\(me)-\(started)-\(UInt32.random(in: 0...UInt32.max))",
            home: parent + "/cgroup.procs"
        )
        guard mkdir(cgroup.path, 0o755) == 0 else { return nil }
        for file in ["cgroup.procs", "cgroup.freeze", "cgroup.kill"] where access(cgroup.path + "/" + file, W_OK) != 0 {
            cgroup.remove()
            return nil
        }
        return cgroup
    }

    /// Moves this process (all its threads) into the cgroup; answers whether the kernel let it.
    func enter() -> Bool {
        Self.write(String(getpid()), to: self.path + "/cgroup.procs")
    }

    /// Moves this process back to its own cgroup; answers whether the kernel let it.
    func leave() -> Bool {
        Self.write(String(getpid()), to: self.home)
    }

    /// Whether a process is in it, or in a cgroup below it.
    var isPopulated: Bool {
        self.event("populated") != "0"
    }

    /// The processes in it now (not those of cgroups below it).
    var members: [pid_t] {
        guard let text = try? String(contentsOfFile: self.path + "/cgroup.procs", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { pid_t($0) }
    }

    /// Freezes every process in it (`cgroup.freeze`) and waits, at most `timeout`, until the
    /// kernel says they are (a process in uninterruptible sleep freezes as it leaves it);
    /// answers whether they all are.
    func freeze(within timeout: Duration = .seconds(2)) async -> Bool {
        guard Self.write("1", to: self.path + "/cgroup.freeze") else { return false }
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
        Self.write("0", to: self.path + "/cgroup.freeze")
    }

    /// SIGKILL to every process in it and in the cgroups below it, at once (`cgroup.kill`),
    /// frozen ones included.
    @discardableResult
    func kill() -> Bool {
        Self.write("1", to: self.path + "/cgroup.kill")
    }

    /// Removes it, and the cgroups a command made below it, deepest first (the kernel refuses
    /// one a process is still in).
    @discardableResult
    func remove() -> Bool {
        Self.removeTree(self.path)
    }

    /// Empties (thawed, then killed whole) and removes the cgroups that connectors no longer
    /// running left in `parent`: named `swarmdeck-command-<pid>-<start time>-…` after a process
    /// that is gone (no process has that pid with that start time). What a connector killed
    /// outright left running ends here, at the next start of a connector beside it, rather
    /// than never (or frozen for good, had it been paused).
    private static func removeAbandoned(in parent: String) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: parent) else { return }
        for entry in entries where entry.hasPrefix("swarmdeck-command-") {
            let fields = entry.dropFirst("swarmdeck-command-".count).split(separator: "-")
            guard fields.count == 3, let pid = pid_t(fields[0]), let started = UInt64(fields[1]) else { continue }
            if ProcessTree.startTime(of: pid) == started { continue }
            let folder = parent + "/" + entry
            Self.write("0", to: folder + "/cgroup.freeze")
            Self.write("1", to: folder + "/cgroup.kill")
            // SIGKILL is quick; one still dying is removed by a later start.
            for _ in 0..<50 where !Self.removeTree(folder) { usleep(10_000) }
        }
    }

    private static func removeTree(_ folder: String) -> Bool {
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: folder) {
            for entry in entries {
                var status = stat()
                let child = folder + "/" + entry
                if lstat(child, &status) == 0, status.st_mode & S_IFMT == S_IFDIR { _ = Self.removeTree(child) }
            }
        }
        return rmdir(folder) == 0
    }

    private func event(_ key: String) -> String? {
        CgroupFiles.event(key, in: self.path)
    }

    @discardableResult
    private static func write(_ value: String, to file: String) -> Bool {
        let fd = open(file, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return Array(value.utf8).withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) } == value.utf8.count
    }
}
