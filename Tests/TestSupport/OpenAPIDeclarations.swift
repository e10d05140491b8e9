public import Contracts
import Foundation

/// What an OpenAPI document of ours declares about each operation, read from its text: the
/// security scheme and the scopes its summary names. A service's credential table is checked
/// against it (every operation has exactly one entry, of the declared kind and scopes).
public enum OpenAPIDeclarations {
    /// The documents `scripts/generate-openapi` makes a contract library from (its lines
    /// `  [control-api]=ControlAPIContract`): each `openapi/<name>.yaml`'s name. Every test
    /// made for each document (credentials, fuzz) checks its list against this one.
    public static func generatedDocuments() throws -> [String] {
        let script = try String(contentsOf: TestEnvironment.repositoryRoot.appendingPathComponent("scripts/generate-openapi"), encoding: .utf8)
        return script.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  ["), let end = line.firstIndex(of: "]"), line.contains("]=") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: 3)..<end])
        }
    }

    /// operationId → the security scheme the document names for it (`none` for `security: []`,
    /// the document's default `accessToken` when the operation says nothing).
    public static func security(_ document: String) -> [String: String] {
        var declared: [String: String] = [:]
        var current: String?
        var afterSecurity = false
        for line in self.pathLines(document) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("operationId:") {
                current = trimmed.dropFirst("operationId:".count).trimmingCharacters(in: .whitespaces)
                declared[current!] = "accessToken"
                afterSecurity = false
            } else if let operation = current, trimmed.hasPrefix("security:") {
                if trimmed == "security: []" { declared[operation] = "none" } else { afterSecurity = true }
            } else if let operation = current, afterSecurity, trimmed.hasPrefix("- ") {
                declared[operation] = String(trimmed.dropFirst(2).prefix { $0 != ":" })
                afterSecurity = false
            }
        }
        return declared
    }

    /// operationId → the scopes its summary names (`(scope `stream:read`)`).
    public static func scopes(_ document: String) -> [String: Set<Scope>] {
        var declared: [String: Set<Scope>] = [:]
        var current: String?
        for line in self.pathLines(document) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("operationId:") {
                current = trimmed.dropFirst("operationId:".count).trimmingCharacters(in: .whitespaces)
                declared[current!] = []
            } else if let operation = current, trimmed.hasPrefix("summary:") {
                declared[operation] = Set(Scope.allCases.filter { trimmed.contains("`\($0.rawValue)`") })
            }
        }
        return declared
    }

    private static func pathLines(_ document: String) -> [String] {
        document.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).prefix { !$0.hasPrefix("components:") }.map { $0 }
    }
}
