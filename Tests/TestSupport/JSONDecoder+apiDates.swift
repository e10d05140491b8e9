public import Foundation
import ServiceKit

extension JSONDecoder {
    /// A decoder for our answers into a client's own types: dates as the services write them,
    /// RFC 3339 with or without fractional seconds.
    public static func apiDates() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = Date(rfc3339: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an RFC 3339 date: \(text)"))
            }
            return date
        }
        return decoder
    }
}
