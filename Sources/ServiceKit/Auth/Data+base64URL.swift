public import Foundation

extension Data {
    /// Decodes base64url (RFC 4648 §5) without padding; nil for any other character.
    public init?(base64URLEncoded text: Substring) {
        guard
            text.utf8.allSatisfy({
                $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
            })
        else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        self.init(base64Encoded: base64)
    }

    /// base64url (RFC 4648 §5) without padding.
    public func base64URLEncodedString() -> String {
        self.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
            of: "=",
            with: ""
        )
    }
}
