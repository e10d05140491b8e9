import OTLP

extension OTLPItemCount {
    /// Counts an OTLP JSON export; throws ``TooMany`` past `limit` items or `maxValues` values.
    func count(json bytes: [UInt8], limit: Int, maxValues: Int = .max) throws -> Count {
        do {
            let (items, values) = try NativeBatchParser.countElements(bytes, path: self.keys, limit: limit, maxValues: maxValues)
            return Count(items: items, values: values)
        } catch {
            if error.tooLarge { throw TooMany(reason: error.reason) }
            throw Malformed(reason: error.reason)
        }
    }
}
