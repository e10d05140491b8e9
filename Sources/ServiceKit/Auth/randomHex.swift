/// `bytes` random bytes from the system's generator, as lower-case hex: ids and secrets
/// (ingest keys, enrolment codes, refresh tokens, command ids).
public func randomHex(bytes: Int) -> String {
    var generator = SystemRandomNumberGenerator()
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(bytes * 2)
    for _ in 0..<bytes {
        let byte = UInt8.random(in: .min ... .max, using: &generator)
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: text, as: UTF8.self)
}
