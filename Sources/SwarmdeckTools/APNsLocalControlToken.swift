import Foundation

/// apns-local's control token, for the tools that read its pushes: from `file`, else
/// `$SWARMDECK_APNS_CONTROL_TOKEN_FILE`, else `control-token` beside its CA file (where
/// apns-local writes it).
public enum APNsLocalControlToken {
    public static func read(file: String?, caFile: String, environment: [String: String]) throws -> String {
        let path =
            file ?? environment["SWARMDECK_APNS_CONTROL_TOKEN_FILE"].flatMap { $0.isEmpty ? nil : $0 }
            ?? URL(fileURLWithPath: caFile).deletingLastPathComponent().appendingPathComponent("control-token").path
        do {
            return try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            throw ReadError(description: "cannot read apns-local's control token from \(path): \(error)")
        }
    }

    public struct ReadError: Error, CustomStringConvertible {
        public var description: String
    }
}
