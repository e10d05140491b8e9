import SwarmdeckTools
import Testing

@Suite("CgroupFiles: the cgroup2 mount and a process's cgroup, from /proc (pure)")
struct CgroupFilesTests {
    @Test("the cgroup2 mount is found on a hybrid host and a unified one; none on a cgroup v1 host; an escaped path is refused")
    func mounts() {
        let hybrid = """
            25 30 0:23 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
            26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
            27 25 0:25 / /sys/fs/cgroup/memory rw,nosuid shared:11 - cgroup cgroup rw,memory
            """
        #expect(CgroupFiles.unifiedMount(mountInfo: hybrid)?.mountPoint == "/sys/fs/cgroup/unified")
        let unified = "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot"
        #expect(CgroupFiles.unifiedMount(mountInfo: unified)?.mountPoint == "/sys/fs/cgroup")
        let v1 = "27 25 0:25 / /sys/fs/cgroup/memory rw,nosuid shared:11 - cgroup cgroup rw,memory"
        #expect(CgroupFiles.unifiedMount(mountInfo: v1) == nil)
        let escaped = #"26 25 0:24 / /mnt/my\040cgroup rw shared:10 - cgroup2 cgroup2 rw"#
        #expect(CgroupFiles.unifiedMount(mountInfo: escaped) == nil)
        // Optional fields before the separator do not shift the mount point.
        let optional = "26 25 0:24 / /sys/fs/cgroup rw shared:10 master:1 - cgroup2 cgroup2 rw"
        #expect(CgroupFiles.unifiedMount(mountInfo: optional)?.mountPoint == "/sys/fs/cgroup")
    }

    @Test("a cgroup's folder is under the mount, less the mount's root; a cgroup the mount does not reach has none")
    func folders() {
        let whole = "35 24 0:30 / /sys/fs/cgroup rw shared:9 - cgroup2 cgroup2 rw"
        #expect(CgroupFiles.unifiedFolder(of: "/", mountInfo: whole) == "/sys/fs/cgroup")
        #expect(CgroupFiles.unifiedFolder(of: "/user.slice/a.scope", mountInfo: whole) == "/sys/fs/cgroup/user.slice/a.scope")
        // A container's mount of its own part of the hierarchy.
        let part = "35 24 0:30 /docker/abc /sys/fs/cgroup rw shared:9 - cgroup2 cgroup2 rw"
        #expect(CgroupFiles.unifiedFolder(of: "/docker/abc", mountInfo: part) == "/sys/fs/cgroup")
        #expect(CgroupFiles.unifiedFolder(of: "/docker/abc/init", mountInfo: part) == "/sys/fs/cgroup/init")
        #expect(CgroupFiles.unifiedFolder(of: "/docker/abcd", mountInfo: part) == nil)
        #expect(CgroupFiles.unifiedFolder(of: "/system.slice", mountInfo: part) == nil)
        #expect(CgroupFiles.unifiedFolder(of: "/", mountInfo: "27 25 0:25 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory") == nil)
    }

    @Test("a process's cgroup is its 0:: line; a v1-only process has none, and a removed cgroup is none")
    func paths() {
        #expect(CgroupFiles.unifiedPath(cgroupFile: "9:name=systemd:/\n8:pids:/\n0::/\n") == "/")
        #expect(
            CgroupFiles.unifiedPath(cgroupFile: "0::/user.slice/user-1000.slice/session-2.scope\n") == "/user.slice/user-1000.slice/session-2.scope"
        )
        #expect(CgroupFiles.unifiedPath(cgroupFile: "9:name=systemd:/\n8:pids:/\n") == nil)
        #expect(CgroupFiles.unifiedPath(cgroupFile: "0::/swarmdeck-command-1-2 (deleted)\n") == nil)
    }
}
