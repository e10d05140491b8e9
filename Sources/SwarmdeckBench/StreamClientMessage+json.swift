import Contracts
import Foundation

extension StreamClientMessage {
    /// The message as the text frame a client sends.
    var json: String {
        String(decoding: (try? JSONEncoder().encode(self)) ?? Data(), as: UTF8.self)
    }
}
