import Foundation
import OpenAPIRuntime
import ServiceKit

/// The line a worker reads for one of seed 004's requests: the JSON-RPC request
/// `{"id": request_id, "method": method, "params": params}` in codex app-server's framing (one
/// JSON object per line, no `jsonrpc` member), keys sorted, on one line.
enum WorkerRequestLine {
    /// The longest line a worker request may be (as `/v1/workers`' `input`).
    static let maxCharacters = 16_000
    /// The longest a registration's metadata may be, encoded.
    static let maxMetadataBytes = 8192

    private struct Request: Encodable {
        var id: String
        var method: String
        var params: OpenAPIObjectContainer
    }

    /// `value` as one line of JSON, keys sorted (never pretty-printed: a line break inside a
    /// string is written `\n`); 400 naming `field` when it cannot be written.
    private static func json(_ value: some Encodable, _ field: String) throws(APIError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return String(decoding: try encoder.encode(value), as: UTF8.self)
        } catch {
            throw APIError(.invalidRequest, "\(field) could not be written as JSON: \(error)")
        }
    }

    /// The line for `method` with `params` (none: `{}`); 400 past ``maxCharacters``.
    static func render(requestID: String, method: String, params: OpenAPIObjectContainer?) throws(APIError) -> String {
        let request = Request(id: requestID, method: method, params: params ?? OpenAPIObjectContainer())
        var line = try self.json(request, "request.params")
        // The encoder escapes the ASCII line breaks; these three it writes as they are, and a
        // reader that splits on every Unicode line break would cut the line there. In JSON they
        // can only be inside a string, where the escape means the same.
        for (character, escape) in [("\u{85}", "\\u0085"), ("\u{2028}", "\\u2028"), ("\u{2029}", "\\u2029")] where line.contains(character) {
            line = line.replacingOccurrences(of: character, with: escape)
        }
        guard line.unicodeScalars.count <= self.maxCharacters else {
            throw APIError(
                .invalidRequest,
                "the request is \(line.unicodeScalars.count) characters as the worker reads it; at most \(self.maxCharacters)",
                details: ["request.params": "at most \(self.maxCharacters) characters with the rest of the request"]
            )
        }
        return line
    }

    /// A registration's metadata as the JSON object stored; 400 past ``maxMetadataBytes``.
    static func metadata(_ metadata: OpenAPIObjectContainer?) throws(APIError) -> String? {
        guard let metadata else { return nil }
        let text = try self.json(metadata, "metadata")
        guard text.utf8.count <= self.maxMetadataBytes else {
            throw APIError(
                .invalidRequest,
                "metadata is \(text.utf8.count) bytes as JSON; at most \(self.maxMetadataBytes)",
                details: ["metadata": "at most \(self.maxMetadataBytes) bytes as JSON"]
            )
        }
        guard !text.unicodeScalars.contains("\u{0}"), !text.contains("\\u0000") else {
            throw APIError(.invalidRequest, "metadata must not contain NUL characters (Postgres stores no NUL in jsonb)")
        }
        return text
    }
}
