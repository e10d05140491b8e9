import Foundation

/// The fuzzer every OpenAPI service's tests run (scripts/test installs it and sets
/// `SWARMDECK_SCHEMATHESIS`): requests generated from the served document must never get a
/// 5xx or a status the document does not list.
public enum Schemathesis {
    /// Runs schemathesis against the document a service serves at `/<document>`, with one
    /// credential, on the paths `pathRegex` matches; returns its exit status and the tail of
    /// its report.
    public static func run(
        port: Int,
        document: String = "openapi.yaml",
        authorization: String,
        pathRegex: String,
        seed: Int
    ) async throws -> (Int32, String) {
        guard let binary = ProcessInfo.processInfo.environment["SWARMDECK_SCHEMATHESIS"] else {
            throw HarnessError(message: "SWARMDECK_SCHEMATHESIS is not set: run the tests with ./scripts/test (it installs schemathesis)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [
            "run", "http://127.0.0.1:\(port)/\(document)", "--url", "http://127.0.0.1:\(port)",
            "--header", "Authorization: \(authorization)", "--checks", "not_a_server_error,status_code_conformance",
            "--include-path-regex", pathRegex, "--max-examples", "40", "--seed", String(seed), "--request-timeout", "120",
            // One worker: CPython 3.11's ast.parse, which hypothesis calls, is not thread-safe.
            "--workers", "1", "--no-color",
        ]
        // Its example database goes to a scratch folder, not the working copy.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("schemathesis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        process.currentDirectoryURL = scratch
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let reader = output.fileHandleForReading
        let data = try await offPool {
            let data = reader.readDataToEndOfFile()
            process.waitUntilExit()
            return data
        }
        return (process.terminationStatus, String(decoding: data.suffix(6000), as: UTF8.self))
    }
}
