import Foundation

/// Seed 000's deep links ("web URLs returned by the API … to avoid client guessing"): a page of
/// the web console for one object, its id percent-encoded as one path segment.
public enum WebLink {
    /// `<base>/<collection>/<id>`, the id's `/`, `?`, `#` and the rest that a path segment may
    /// not hold percent-encoded. An id of `.` or `..` (which ids checked as `EntityID` cannot
    /// be) links to the collection: a browser resolves it as a path step however it is escaped.
    public static func url(base: String, _ collection: String, _ id: String) -> String {
        guard id != ".", id != ".." else { return "\(base)/\(collection)" }
        return "\(base)/\(collection)/\(id.addingPercentEncoding(withAllowedCharacters: Self.segment) ?? id)"
    }

    private static let segment: CharacterSet = {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove("/")
        return allowed
    }()
}
