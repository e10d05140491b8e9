import Foundation
import ServiceKit

/// Writes artifacts to a folder in seed 001's layout, `{title}/{role}-{ISO8601}.md` (colons of
/// the time as dashes, to the millisecond so two attempts never share a name), under a folder per tenant so tenants never share one. The title is
/// sanitized as the seed does (letters, digits, `-`, `_` and spaces kept, the rest `-`), and
/// cut to 100 characters.
struct ArtifactExporter: Sendable {
    let directory: URL

    /// Writes `content` and returns its path relative to the export folder.
    func export(tenant: String, title: String, role: PipelineRole, createdAt: Date, content: String) throws -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let timestamp = formatter.string(from: createdAt).replacingOccurrences(of: ":", with: "-")
        let folder = Self.sanitize(title).isEmpty ? "project" : Self.sanitize(title)
        let relative = "\(Self.tenantFolder(tenant))/\(folder)/\(role.rawValue)-\(timestamp).md"
        let file = self.directory.appendingPathComponent(relative)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(content.utf8).write(to: file, options: .atomic)
        return relative
    }

    /// Removes a file `export` wrote, if it is there.
    func remove(_ relative: String) {
        try? FileManager.default.removeItem(at: self.directory.appendingPathComponent(relative))
    }

    /// Seed 001's `sanitizeFilename`.
    static func sanitize(_ name: String) -> String {
        var out = ""
        var dash = false
        for scalar in name.unicodeScalars.prefix(100) {
            let keep = CharacterSet.alphanumerics.contains(scalar) || "-_ ".unicodeScalars.contains(scalar)
            if keep {
                out.unicodeScalars.append(scalar)
                dash = false
            } else if !dash {
                out.append("-")
                dash = true
            }
        }
        return out.trimmingCharacters(in: CharacterSet(charactersIn: "-"))
    }

    /// A tenant id as one safe path component (hex of its bytes when it is not plain).
    static func tenantFolder(_ tenant: String) -> String {
        let plain = tenant.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D || $0 == 0x5F
        }
        return plain && !tenant.isEmpty ? tenant : "t-" + tenant.utf8.lowercaseHex
    }
}
