import PlainWebSocket
import ServiceKit

extension StreamClient {
    /// Sends `messages` and returns the raw texts of as many answers.
    public func runRaw(sending messages: [String]) async throws -> [String] {
        let received = StreamClient.Received()
        let url = self.url
        let token = self.token
        let count = messages.count
        _ = try await withDeadline(.seconds(20), orThrow: ServiceKitError(.natsTimeout, "no answer")) {
            try await PlainWebSocket.connect(url: url, bearer: token) { inbound, outbound in
                for message in messages { try await outbound.write(text: message) }
                for try await message in inbound {
                    guard case .text(let text) = message else { continue }
                    if received.texts.withLock({
                        $0.append(text)
                        return $0.count
                    }) == count {
                        return
                    }
                }
            }
        }
        return received.texts.withLock { $0 }
    }
}
