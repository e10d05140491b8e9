import Foundation

/// Seed 000's deep links ("web URLs returned by the API … to avoid client guessing"): a page of
/// the web console for one object, its id percent-encoded as one path segment.
public enum WebLink {
    /// `<base>/<collection>/<id>`, the id's `/`, `?`, `#` and the rest that a path segment may
    /// not hold percent-encoded.
    /// An id of `.` or `..` is written `%2E`, `%2E%2E`: a browser would resolve it as a path step.
    public static func url(base: String, _ collection: String, _ id: String) -> String {
        let segment =
            id == "." || id == ".." ? String(repeating: "%2E", count: id.count) : id.addingPercentEncoding(withAllowedCharacters: Self.segment) ?? id
        return "\(base)/\(collection)/\(segment)"
    }

    private static let segment: CharacterSet = {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove("/")
        return allowed
    }()
}
