import ServiceKit
import Testing

@Suite("Deep links: one console page per object, its id one path segment")
struct WebLinkTests {
    @Test("an id with a slash, a space, a query or fragment sign and a non-ASCII letter stays one segment")
    func encoded() {
        #expect(WebLink.url(base: "https://console.example", "sessions", "abc-1") == "https://console.example/sessions/abc-1")
        #expect(WebLink.url(base: "http://x", "agents", "team/α 1?#") == "http://x/agents/team%2F%CE%B1%201%3F%23")
        // Path steps are no ids to a browser, however escaped: they link to the collection.
        #expect(WebLink.url(base: "http://x", "sessions", "..") == "http://x/sessions")
        #expect(WebLink.url(base: "http://x", "sessions", ".") == "http://x/sessions")
        #expect(WebLink.url(base: "http://x", "sessions", "a..b") == "http://x/sessions/a..b")
    }
}
