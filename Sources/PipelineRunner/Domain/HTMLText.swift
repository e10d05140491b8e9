import Foundation

/// Seed 001's `WebFetchService.stripHTML`: script and style blocks removed, every other tag
/// replaced by a space, whitespace collapsed; then cut to `maxCharacters`.
enum HTMLText {
    static func strip(_ html: String, maxCharacters: Int = 8_000) -> String {
        var text = html.replacingOccurrences(of: "<script[^>]*>[\\s\\S]*?</script>", with: " ", options: [.regularExpression, .caseInsensitive])
        text = text.replacingOccurrences(of: "<style[^>]*>[\\s\\S]*?</style>", with: " ", options: [.regularExpression, .caseInsensitive])
        text = text.replacingOccurrences(of: "<[^>]+>", with: " ", options: .regularExpression)
        text = text.replacingOccurrences(of: "\\s+", with: " ", options: .regularExpression)
        return String(text.trimmingCharacters(in: .whitespaces).prefix(maxCharacters))
    }
}
