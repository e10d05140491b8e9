import Foundation

/// An unencrypted OpenSSH ed25519 private key, read from the file `ssh-keygen` writes
/// (`-----BEGIN OPENSSH PRIVATE KEY-----`, the openssh-key-v1 format).
///
/// The parse checks the file's own consistency (the check words, the public key in its three
/// places, the padding), not that ``seed`` derives ``publicKey``: that takes the Ed25519 maths,
/// which the caller's crypto library does when it loads the seed.
///
/// Its `description` never shows the seed.
struct OpenSSHPrivateKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The most text a key file may have; an ed25519 key file is about 400 bytes.
    static let maxTextBytes = 65_536

    /// The 32-byte Ed25519 seed (what RFC 8032 calls the private key).
    var seed: [UInt8]
    /// The 32-byte Ed25519 public key.
    var publicKey: [UInt8]
    /// The key's comment (`ssh-keygen -C`), often `user@host`; may be empty.
    var comment: String

    /// Parses a key file's text.
    ///
    /// - Throws: ``OpenSSHKeyError``: ``OpenSSHKeyError/notOpenSSH`` when the text is not an OpenSSH key file,
    ///   ``OpenSSHKeyError/encrypted(cipher:)`` for a key with a passphrase, ``OpenSSHKeyError/unsupportedKeyType(_:)``
    ///   for a key other than ed25519, and ``OpenSSHKeyError/malformed(_:)`` or ``OpenSSHKeyError/checkMismatch``
    ///   for a damaged one.
    init(openSSH text: String) throws(OpenSSHKeyError) {
        let size = text.utf8.count
        guard size <= Self.maxTextBytes else { throw .tooLarge(bytes: size) }
        let blob = try Self.armoredBlob(text)
        var reader = SSHWireReader(blob)

        guard try reader.readBytes(Self.magic.count, "magic") == Self.magic else {
            throw .malformed("it does not start with openssh-key-v1")
        }
        let cipher = try reader.readUTF8String("cipher name")
        let kdf = try reader.readUTF8String("KDF name")
        let kdfOptions = try reader.readString("KDF options")
        guard cipher == "none" else { throw .encrypted(cipher: cipher) }
        guard kdf == "none", kdfOptions.isEmpty else { throw .malformed("KDF \(kdf) without a cipher") }
        let keyCount = try reader.readUInt32("number of keys")
        guard keyCount == 1 else { throw .malformed("\(keyCount) keys in one file (1 expected)") }

        var publicBlob = SSHWireReader(try reader.readString("public key"))
        let publicType = try publicBlob.readUTF8String("public key type")
        guard publicType == Self.keyType else { throw .unsupportedKeyType(publicType) }
        let publicKey = try publicBlob.readString("public key")
        guard publicKey.count == 32, publicBlob.isAtEnd else { throw .malformed("the public key is not 32 bytes") }

        let privateSection = try reader.readString("private section")
        guard reader.isAtEnd else { throw .malformed("\(reader.remaining) bytes after the private section") }
        // Without a cipher the section is padded to 8-byte blocks.
        guard privateSection.count % 8 == 0 else { throw .malformed("the private section is not a whole number of blocks") }

        var section = SSHWireReader(privateSection)
        let check1 = try section.readUInt32("check word")
        let check2 = try section.readUInt32("check word")
        guard check1 == check2 else { throw .checkMismatch }
        let privateType = try section.readUTF8String("private key type")
        guard privateType == Self.keyType else { throw .unsupportedKeyType(privateType) }
        guard try section.readString("private section's public key") == publicKey else {
            throw .malformed("the private section's public key differs from the file's")
        }
        let keyPair = try section.readString("private key")
        guard keyPair.count == 64 else { throw .malformed("the private key is \(keyPair.count) bytes (64 expected)") }
        guard Array(keyPair[32...]) == publicKey else { throw .malformed("the private key's public half differs from the public key") }
        let commentBytes = try section.readString("comment")
        guard let comment = String(validating: commentBytes, as: UTF8.self) else { throw .malformed("the comment is not UTF-8") }

        let padding = section.rest
        guard padding.count < 8, padding.elementsEqual((0..<padding.count).map { UInt8($0 + 1) }) else {
            throw .malformed("bad padding after the comment")
        }

        self.seed = Array(keyPair[..<32])
        self.publicKey = publicKey
        self.comment = comment
    }

    /// A key from its seed and public key (which the caller derived from it).
    init(seed: [UInt8], publicKey: [UInt8], comment: String) {
        self.seed = seed
        self.publicKey = publicKey
        self.comment = comment
    }

    /// The key file's text, as `ssh-keygen` writes it (no passphrase): what ``init(openSSH:)``
    /// reads back.
    var openSSHText: String {
        func string(_ bytes: [UInt8]) -> [UInt8] {
            withUnsafeBytes(of: UInt32(bytes.count).bigEndian, Array.init) + bytes
        }
        let publicBlob = string(Array(Self.keyType.utf8)) + string(self.publicKey)
        let check = withUnsafeBytes(of: UInt32.random(in: 0...UInt32.max), Array.init)
        var section = check + check + string(Array(Self.keyType.utf8)) + string(self.publicKey)
        section += string(self.seed + self.publicKey) + string(Array(self.comment.utf8))
        var pad: UInt8 = 1
        while section.count % 8 != 0 {
            section.append(pad)
            pad += 1
        }
        let blob =
            Self.magic + string(Array("none".utf8)) + string(Array("none".utf8)) + string([]) + [0, 0, 0, 1] + string(publicBlob) + string(section)
        let base64 = Data(blob).base64EncodedString()
        let lines = stride(from: 0, to: base64.count, by: 70).map { start in
            let from = base64.index(base64.startIndex, offsetBy: start)
            return String(base64[from..<(base64.index(from, offsetBy: 70, limitedBy: base64.endIndex) ?? base64.endIndex)])
        }
        return ([Self.beginMarker] + lines + [Self.endMarker]).joined(separator: "\n") + "\n"
    }

    var description: String {
        let hex = self.publicKey.map { String($0, radix: 16) }.map { $0.count == 1 ? "0" + $0 : $0 }.joined()
        return "OpenSSHPrivateKey(ssh-ed25519 \(hex), comment: \(self.comment.debugDescription), seed: <redacted>)"
    }

    var debugDescription: String { self.description }

    static let keyType = "ssh-ed25519"
    private static let magic = Array("openssh-key-v1\0".utf8)
    private static let beginMarker = "-----BEGIN OPENSSH PRIVATE KEY-----"
    private static let endMarker = "-----END OPENSSH PRIVATE KEY-----"

    /// The base64-decoded bytes between the BEGIN and END lines.
    private static func armoredBlob(_ text: String) throws(OpenSSHKeyError) -> [UInt8] {
        guard let begin = text.range(of: Self.beginMarker) else { throw .notOpenSSH }
        guard let end = text.range(of: Self.endMarker, range: begin.upperBound..<text.endIndex) else {
            throw .malformed("no -----END OPENSSH PRIVATE KEY----- line")
        }
        let body = text[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        guard !body.isEmpty else { throw .malformed("no key between the BEGIN and END lines") }
        guard let data = Data(base64Encoded: String(body)) else { throw .malformed("the key is not valid base64") }
        return Array(data)
    }
}

/// Why ``OpenSSHPrivateKey/init(openSSH:)`` refused a key file.
enum OpenSSHKeyError: Error, Equatable, CustomStringConvertible {
    /// The text has no `-----BEGIN OPENSSH PRIVATE KEY-----` line (a PEM or PKCS#8 key, a public key, or not a key).
    case notOpenSSH
    /// The key has a passphrase: it is encrypted with `cipher` (e.g. "aes256-ctr").
    case encrypted(cipher: String)
    /// The key is of a type other than ssh-ed25519 (e.g. "ssh-rsa").
    case unsupportedKeyType(String)
    /// The key file is damaged or truncated; the string says where.
    case malformed(String)
    /// The private section's two check words differ (a damaged key).
    case checkMismatch
    /// The text is larger than ``OpenSSHPrivateKey/maxTextBytes``.
    case tooLarge(bytes: Int)

    var description: String {
        switch self {
        case .notOpenSSH:
            "not an OpenSSH private key (expected a -----BEGIN OPENSSH PRIVATE KEY----- block, as ssh-keygen writes)"
        case .encrypted(let cipher):
            "the OpenSSH private key is encrypted with \(cipher); a key without a passphrase is needed "
                + "(remove it with ssh-keygen -p -N '' -f FILE)"
        case .unsupportedKeyType(let type):
            "unsupported key type \(type): only ssh-ed25519 keys are supported"
        case .malformed(let detail):
            "malformed OpenSSH private key: \(detail)"
        case .checkMismatch:
            "malformed OpenSSH private key: its check words differ (the key is damaged)"
        case .tooLarge(let bytes):
            "the OpenSSH private key file is \(bytes) bytes, more than the \(OpenSSHPrivateKey.maxTextBytes) allowed"
        }
    }
}

/// Reads the SSH wire encoding (RFC 4251: big-endian uint32, and strings as a uint32 length and
/// the bytes), refusing any read past the end.
private struct SSHWireReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var remaining: Int { self.bytes.count - self.offset }
    var isAtEnd: Bool { self.remaining == 0 }
    var rest: ArraySlice<UInt8> { self.bytes[self.offset...] }

    mutating func readBytes(_ count: Int, _ what: String) throws(OpenSSHKeyError) -> [UInt8] {
        guard count <= self.remaining else { throw .malformed("truncated at the \(what)") }
        defer { self.offset += count }
        return Array(self.bytes[self.offset..<self.offset + count])
    }

    mutating func readUInt32(_ what: String) throws(OpenSSHKeyError) -> UInt32 {
        try self.readBytes(4, what).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func readString(_ what: String) throws(OpenSSHKeyError) -> [UInt8] {
        let length = try self.readUInt32(what)
        // Compared as UInt32 first: a huge length must not overflow Int on a 32-bit platform.
        guard length <= UInt32(clamping: self.remaining) else { throw .malformed("truncated at the \(what)") }
        return try self.readBytes(Int(length), what)
    }

    mutating func readUTF8String(_ what: String) throws(OpenSSHKeyError) -> String {
        guard let string = String(validating: try self.readString(what), as: UTF8.self) else {
            throw .malformed("the \(what) is not UTF-8")
        }
        return string
    }
}
