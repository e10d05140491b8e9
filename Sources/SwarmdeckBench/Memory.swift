import Foundation

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

/// CPU time of processes, as the benches report it: user plus system seconds from `/proc`.
enum ProcessCPU {
    /// The CPU seconds process `pid` has used; 0 when it cannot be read.
    static func seconds(_ pid: Int32) -> Double {
        guard pid > 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return 0 }
        // After the command's closing parenthesis: state is field 3; utime and stime are 14 and 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The processes whose command name is `name`.
    static func pids(named name: String) -> [Int32] {
        Self.pids { pid in
            (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) == name
        }
    }

    /// The processes that run the service `name`: `swarmdeckd <name>`, or an older build's own
    /// executable `<name>`.
    static func servicePIDs(_ name: String) -> [Int32] {
        Self.pids { pid in
            guard let command = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            let argv = command.split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            let program = argv.first.map { ($0 as NSString).lastPathComponent } ?? ""
            return program == name || (program == "swarmdeckd" && argv.count > 1 && argv[1] == name)
        }
    }

    /// The processes of this machine for which `matches` holds.
    private static func pids(where matches: (Int32) -> Bool) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry in Int32(entry).flatMap { matches($0) ? $0 : nil } }
    }

    /// A set of named process groups, read together.
    struct Sample {
        var seconds: [String: Double]

        init(_ groups: [(String, [Int32])]) {
            self.seconds = Dictionary(groups.map { ($0.0, $0.1.reduce(0) { $0 + ProcessCPU.seconds($1) }) }, uniquingKeysWith: +)
        }

        /// The seconds each group used since `earlier`, in the order given.
        func since(_ earlier: Sample, order: [String]) -> [(String, Double)] {
            order.map { ($0, (self.seconds[$0] ?? 0) - (earlier.seconds[$0] ?? 0)) }
        }
    }
}
