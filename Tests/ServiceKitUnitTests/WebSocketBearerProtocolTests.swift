import ServiceKit
import Testing

@Suite struct WebSocketBearerProtocolTests {
    @Test func readsTheTokenAndTheApplicationProtocol() {
        let offered = WebSocketBearerProtocol(headerValues: ["swarmdeck.v1, swarmdeck.bearer.eyJhbGciOi.eyJzdWIi.c2ln"])
        #expect(offered.token == "eyJhbGciOi.eyJzdWIi.c2ln")
        #expect(offered.offersApplication)
    }

    @Test func readsEveryFieldValueAndKeepsTheFirstToken() {
        let offered = WebSocketBearerProtocol(headerValues: ["swarmdeck.bearer.first", " swarmdeck.bearer.second ,\tswarmdeck.v1"])
        #expect(offered.token == "first")
        #expect(offered.offersApplication)
    }

    @Test func ignoresOtherProtocolsAndEmptyTokens() {
        let offered = WebSocketBearerProtocol(headerValues: ["chat, swarmdeck.bearer., swarmdeck.v2, bearer.x"])
        #expect(offered.token == nil)
        #expect(!offered.offersApplication)
        #expect(WebSocketBearerProtocol(headerValues: []) == WebSocketBearerProtocol(headerValues: [""]))
    }
}
