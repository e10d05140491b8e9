/// Whether `a` and `b` hold the same bytes, in a time that depends on their lengths only, not on
/// where they first differ: for comparing secrets (a key's digest, a bearer token).
public func constantTimeEqual(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
    guard a.count == b.count else { return false }
    return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
}
