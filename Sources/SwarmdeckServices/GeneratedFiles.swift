import ArgumentParser
import Foundation

/// The options and the loop of a command that writes files from the code (`swarmdeckd config
/// docs`, `swarmdeckd deploy write`): each file's new text from its current one, written, or
/// with `--check` compared and the stale ones named.
struct GeneratedFiles: ParsableArguments {
    @Option(help: "The repository's root.")
    var root = "."

    @Flag(help: "Change nothing; fail if a file is out of date.")
    var check = false

    /// Writes (or checks) each file of `files`: its path from the root, and its new text from
    /// its current one (nil when it does not exist). `command` is what brings them up to date.
    func apply(_ files: [(path: String, text: (String?) throws -> String)], command: String) throws {
        // Every file rendered before any is written: a file that cannot be leaves the others as they were.
        var stale: [(path: String, url: URL, text: String)] = []
        for file in files {
            let url = URL(fileURLWithPath: self.root).appendingPathComponent(file.path)
            let current = try? String(contentsOf: url, encoding: .utf8)
            let written = try file.text(current)
            if written != current { stale.append((file.path, url, written)) }
        }
        if !self.check {
            for file in stale {
                try FileManager.default.createDirectory(at: file.url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try file.text.write(to: file.url, atomically: true, encoding: .utf8)
            }
        }
        if self.check && !stale.isEmpty {
            throw ValidationError("out of date: \(stale.map(\.path).joined(separator: ", ")); run \(command)")
        }
        print(stale.isEmpty ? "every file is up to date" : "wrote \(stale.map(\.path).joined(separator: ", "))")
    }
}
