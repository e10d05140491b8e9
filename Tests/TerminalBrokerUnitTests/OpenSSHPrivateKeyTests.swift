import Foundation
import SwarmdeckTools
import TestSupport
import Testing

@testable import TerminalBroker

/// Throwaway keys made for these tests with OpenSSH 9.2's ssh-keygen; they protect nothing.
private enum Fixtures {
    /// `ssh-keygen -t ed25519 -N '' -C 'test comment'`.
    static let ed25519 = """
        -----BEGIN OPENSSH PRIVATE KEY-----
        b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
        QyNTUxOQAAACBWwHJQi7dmCEeEQ/zMNo65P0ZyqBVmyABkrjSe5Mqg9QAAAJAmZpfdJmaX
        3QAAAAtzc2gtZWQyNTUxOQAAACBWwHJQi7dmCEeEQ/zMNo65P0ZyqBVmyABkrjSe5Mqg9Q
        AAAECSeTvirLxBez/NlyI97UMkmdNntyg/GQt26f6rHkVGGFbAclCLt2YIR4RD/Mw2jrk/
        RnKoFWbIAGSuNJ7kyqD1AAAADHRlc3QgY29tbWVudAE=
        -----END OPENSSH PRIVATE KEY-----

        """
    /// Its `.pub` line.
    static let ed25519Public = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFbAclCLt2YIR4RD/Mw2jrk/RnKoFWbIAGSuNJ7kyqD1 test comment"
    /// Its seed, as Python's `cryptography` reads the same file (which derives the public key above from it).
    static let ed25519Seed = "92793be2acbc417b3fcd97223ded432499d367b7283f190b76e9feab1e454618"

    /// `ssh-keygen -t ed25519 -N '' -C ''`, whose `.pub` key is below.
    static let ed25519NoComment = """
        -----BEGIN OPENSSH PRIVATE KEY-----
        b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
        QyNTUxOQAAACDbOwMSdVSzukK6Zvj2MPHm7eY+aL1cPBJXjPfwimnvuwAAAIjg7ThQ4O04
        UAAAAAtzc2gtZWQyNTUxOQAAACDbOwMSdVSzukK6Zvj2MPHm7eY+aL1cPBJXjPfwimnvuw
        AAAEAAQT88v+JQrz7Nvl6MoL8Oal3KbE1oEQMxUiFJTXhc1ts7AxJ1VLO6Qrpm+PYw8ebt
        5j5ovVw8EleM9/CKae+7AAAAAAECAwQF
        -----END OPENSSH PRIVATE KEY-----
        """
    static let ed25519NoCommentPublic = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINs7AxJ1VLO6Qrpm+PYw8ebt5j5ovVw8EleM9/CKae+7"

    /// `ssh-keygen -t ed25519 -N secret -C enc`.
    static let encrypted = """
        -----BEGIN OPENSSH PRIVATE KEY-----
        b3BlbnNzaC1rZXktdjEAAAAACmFlczI1Ni1jdHIAAAAGYmNyeXB0AAAAGAAAABCQhMrpe+
        yvslDvzk9x501DAAAAEAAAAAEAAAAzAAAAC3NzaC1lZDI1NTE5AAAAIHtMiu9UEXScyA9E
        Q0zteIoap1TXCv/jEMa4hzyooekaAAAAkLyxM4bipMhFReZsz8tRGv3IqzKgr/ygsYpLZ0
        3YqMD6UGg7cFu8aYv3YesCDBcS5357yWvVmYK3iavdjalk7U4Q9Z8D0LFDhVJHd64J/K+/
        8um9bXOSpSAq7tpRJjuse9wm6rCRJ4q5dqAWYlEoQk++mXxJ/vM1VL3X3Xxlpx2znpEXGs
        wiluQQOcysKuz+IQ==
        -----END OPENSSH PRIVATE KEY-----
        """

    /// `ssh-keygen -t rsa -b 1024 -N '' -C rsa`.
    static let rsa = """
        -----BEGIN OPENSSH PRIVATE KEY-----
        b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAlwAAAAdzc2gtcn
        NhAAAAAwEAAQAAAIEA0EF9rjv+1DEt/d2dzeritdPMR5XJl0NO8/YV8nOz8aspN2HkpBpF
        obJKvrvMBbK+4ZEM/DesVjG3+TR4swjqCEjfkG2LqCp8ORJWy6N7cUgKZG6BbhElJjccP7
        zl6ONIDIMYZWZHRYt5c8ypoWMltoaNCRN1VjAbYQtTScMZdbsAAAIALE0ELyxNBC8AAAAH
        c3NoLXJzYQAAAIEA0EF9rjv+1DEt/d2dzeritdPMR5XJl0NO8/YV8nOz8aspN2HkpBpFob
        JKvrvMBbK+4ZEM/DesVjG3+TR4swjqCEjfkG2LqCp8ORJWy6N7cUgKZG6BbhElJjccP7zl
        6ONIDIMYZWZHRYt5c8ypoWMltoaNCRN1VjAbYQtTScMZdbsAAAADAQABAAAAgQCRB4rG8/
        EbRMSKrvNem90WU1FH6QBi3vT04MOX/QurmU8yynG39rPXT5rOCWqj7T8RRzqLyxmxTR6Z
        5fjIdcTEjn66rgtaAJIwdKVSEyRGru5+ds1n3Wv1u3bbFP3u1FJ/j020Jrkau+G5lsVnSI
        5Z+clzNvmb3vSe/5rbqVhjQQAAAEEAothS6FKLFviub7/3PpE3RmSUGkIdjifsja+rS4G+
        GtvBr9LN7+5V6Nckgv8jJb9iKi4JYBuMhaMBpZD7i3wMXwAAAEEA7cSED0Amwh/+5HPojp
        lR/4+2zaaEw/SnppUP+32cbQlw9FtWm4b+u9/VL7cFXvTTM4AR1EEOkpB2ZlHTfcIf1wAA
        AEEA4DmlIkQZ6KDgh5mG6PZCiQW1iogVWdJ3yr9UqhFbwDuI1eCfZIBHlzb1TgWaAi9ZHX
        QCxt90N0ZFwfuzL0ksvQAAAANyc2EBAgMEBQY=
        -----END OPENSSH PRIVATE KEY-----
        """

    /// The binary openssh-key-v1 blob of ``ed25519``.
    static var ed25519Blob: [UInt8] {
        let body = Self.ed25519.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return Array(Data(base64Encoded: body)!)
    }

    /// The 32-byte key of a `.pub` line: the end of its blob, after the "ssh-ed25519" string and the key's length.
    static func publicKey(ofPubLine line: String) -> [UInt8]? {
        let fields = line.split(separator: " ")
        guard fields.count >= 2, fields[0] == "ssh-ed25519", let data = Data(base64Encoded: String(fields[1])) else { return nil }
        let blob = Array(data)
        let prefix = [0, 0, 0, 11] + Array("ssh-ed25519".utf8) + [0, 0, 0, 32]
        guard blob.count == prefix.count + 32, Array(blob.prefix(prefix.count)) == prefix else { return nil }
        return Array(blob.suffix(32))
    }

    /// `blob` armored the way ssh-keygen writes it: base64 in lines of 70 between the markers.
    static func armor(_ blob: [UInt8]) -> String {
        let base64 = Data(blob).base64EncodedString()
        var lines: [Substring] = []
        var rest = Substring(base64)
        while !rest.isEmpty {
            lines.append(rest.prefix(70))
            rest = rest.dropFirst(70)
        }
        return "-----BEGIN OPENSSH PRIVATE KEY-----\n" + lines.joined(separator: "\n") + "\n-----END OPENSSH PRIVATE KEY-----\n"
    }
}

private func parseError(_ text: String) -> OpenSSHKeyError? {
    do {
        _ = try OpenSSHPrivateKey(openSSH: text)
        return nil
    } catch {
        return error
    }
}

private func isMalformed(_ error: OpenSSHKeyError?) -> Bool {
    if case .malformed = error { return true }
    return false
}

@Suite("OpenSSH ed25519 key files from ssh-keygen parse to their seed, public key and comment; others are refused with a reason, never a crash")
struct OpenSSHPrivateKeyTests {
    @Test func anEd25519KeyGivesTheSeedThePublicKeyOfItsPubLineAndTheComment() throws {
        let key = try OpenSSHPrivateKey(openSSH: Fixtures.ed25519)
        let expectedPublicKey = try #require(Fixtures.publicKey(ofPubLine: Fixtures.ed25519Public))
        #expect(key.publicKey == expectedPublicKey)
        #expect(key.seed.map { String(format: "%02x", $0) }.joined() == Fixtures.ed25519Seed)
        #expect(key.comment == "test comment")

        let noComment = try OpenSSHPrivateKey(openSSH: Fixtures.ed25519NoComment)
        #expect(noComment.publicKey == Fixtures.publicKey(ofPubLine: Fixtures.ed25519NoCommentPublic))
        #expect(noComment.comment == "")
        #expect(noComment != key)
    }

    @Test("a tenant's key written as a key file reads back, and OpenSSH's ssh-keygen derives from it the public line the broker shows")
    func tenantKeyFileIsOpenSSHs() throws {
        let keys = try TenantSSHKeys(brokerKeyText: Fixtures.ed25519)
        let text = keys.privateKeyText(tenant: "t1")
        let parsed = try OpenSSHPrivateKey(openSSH: text)
        #expect(parsed.comment == "swarmdeck-t1")
        #expect(try OpenSSHPrivateKey(openSSH: parsed.openSSHText) == parsed)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tenant-key-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(text.utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        let derived = try Spawn.output("/usr/bin/ssh-keygen", ["-y", "-f", file.path]).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(derived.split(separator: " ").prefix(2) == keys.publicKeyLine(tenant: "t1").split(separator: " ").prefix(2))
        #expect(keys.publicKeyLine(tenant: "t1") != keys.publicKeyLine(tenant: "t2"))
    }

    @Test func whitespaceAroundAndWindowsLineEndsAreAccepted() throws {
        let key = try OpenSSHPrivateKey(openSSH: Fixtures.ed25519)
        let crlf = Fixtures.ed25519.replacingOccurrences(of: "\n", with: "\r\n")
        #expect(try OpenSSHPrivateKey(openSSH: "\n  " + crlf + "  \n") == key)
        let trailingBlanks = Fixtures.armor(Fixtures.ed25519Blob).replacingOccurrences(of: "=\n", with: "=  \n")
        #expect(try OpenSSHPrivateKey(openSSH: trailingBlanks) == key)
    }

    @Test func itsDescriptionNeverShowsTheSeed() throws {
        let key = try OpenSSHPrivateKey(openSSH: Fixtures.ed25519)
        let seedHex = key.seed.map { String(format: "%02x", $0) }.joined()
        for text in [key.description, key.debugDescription, String(describing: key), String(reflecting: key), "\(key)"] {
            #expect(!text.contains(seedHex))
            #expect(!text.contains(seedHex.prefix(8)))
            #expect(text.contains("test comment"))
        }
    }

    @Test func anEncryptedKeyIsRefusedNamingItsCipher() {
        let error = parseError(Fixtures.encrypted)
        #expect(error == .encrypted(cipher: "aes256-ctr"))
        #expect(error?.description.contains("aes256-ctr") == true)
        #expect(error?.description.contains("passphrase") == true)
    }

    @Test func anRSAKeyIsRefusedAsAnUnsupportedType() {
        let error = parseError(Fixtures.rsa)
        #expect(error == .unsupportedKeyType("ssh-rsa"))
        #expect(error?.description.contains("ssh-rsa") == true)
    }

    @Test(arguments: [
        "",
        "hello",
        Fixtures.ed25519Public,
        "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----\n",
        "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n-----END PRIVATE KEY-----\n",
    ])
    func textWithoutAnOpenSSHBlockIsNotOpenSSH(text: String) {
        #expect(parseError(text) == .notOpenSSH)
    }

    @Test func aFileOver64KiBIsRefusedBeforeItIsRead() {
        let padded = Fixtures.ed25519 + String(repeating: " ", count: 65_536)
        #expect(parseError(padded) == .tooLarge(bytes: padded.utf8.count))
        // Just under the bound, the same key with trailing blanks is fine.
        let underBound = Fixtures.ed25519 + String(repeating: " ", count: 65_536 - Fixtures.ed25519.utf8.count)
        #expect(parseError(underBound) == nil)
    }

    @Test func everyTruncationOfTheTextIsRefusedUntilTheEndLineIsWhole() throws {
        let text = Array(Fixtures.ed25519.utf8)
        let endLine = try #require(Fixtures.ed25519.range(of: "-----END OPENSSH PRIVATE KEY-----"))
        let wholeEnd = Fixtures.ed25519.utf8.distance(from: Fixtures.ed25519.startIndex, to: endLine.upperBound)
        for length in 0...text.count {
            let error = parseError(String(decoding: text.prefix(length), as: UTF8.self))
            if length >= wholeEnd {
                #expect(error == nil, "length \(length)")
            } else {
                #expect(error == .notOpenSSH || isMalformed(error), "length \(length): \(String(describing: error))")
            }
        }
    }

    @Test func everyTruncationOfTheBinaryKeyIsMalformed() {
        let blob = Fixtures.ed25519Blob
        #expect(parseError(Fixtures.armor(blob)) == nil)
        for length in 0..<blob.count {
            let error = parseError(Fixtures.armor(Array(blob.prefix(length))))
            #expect(isMalformed(error), "length \(length): \(String(describing: error))")
        }
    }

    @Test func damageToEachCheckedFieldIsCaught() throws {
        let blob = Fixtures.ed25519Blob
        // openssh-key-v1's layout for this key: the check words at 98..<106, the private section's
        // copy of the public key at 125..<157, the key pair at 161..<225 (its public half from 193),
        // the comment at 229..<241, and one padding byte, 0x01, at 241.
        try #require(blob.count == 242 && blob[241] == 1)
        func damaged(_ offset: Int, _ value: UInt8? = nil) -> String {
            var copy = blob
            copy[offset] = value ?? copy[offset] ^ 0x01
            return Fixtures.armor(copy)
        }
        #expect(parseError(damaged(0)) == .malformed("it does not start with openssh-key-v1"))
        #expect(parseError(damaged(103)) == .checkMismatch)
        #expect(isMalformed(parseError(damaged(130))))
        #expect(isMalformed(parseError(damaged(200))))
        #expect(isMalformed(parseError(damaged(241, 2))))
        #expect(isMalformed(parseError(damaged(235, 0xFF))))  // the comment is no longer UTF-8
        // The seed itself has no check: a changed seed still parses (the caller's crypto derives the public key).
        #expect(try OpenSSHPrivateKey(openSSH: damaged(170)).seed != OpenSSHPrivateKey(openSSH: Fixtures.ed25519).seed)
        // Bytes after the private section, or a wrong count of keys.
        #expect(isMalformed(parseError(Fixtures.armor(blob + [0]))))
        var twoKeys = blob
        twoKeys[38] = 2
        #expect(parseError(Fixtures.armor(twoKeys)) == .malformed("2 keys in one file (1 expected)"))
        // Not base64.
        #expect(isMalformed(parseError(Fixtures.ed25519.replacingOccurrences(of: "b3Blbn", with: "b3*lbn"))))
    }

    @Test func randomMutationsNeverCrashAndNeverYieldAnotherPublicKey() throws {
        let blob = Fixtures.ed25519Blob
        let original = try OpenSSHPrivateKey(openSSH: Fixtures.ed25519)
        var random = SplitMix64(state: 0x5EED)
        var refused = 0
        for round in 0..<2000 {
            var copy = blob
            let offset = Int.random(in: 0..<copy.count, using: &random)
            copy[offset] ^= UInt8.random(in: 1...255, using: &random)
            do {
                let key = try OpenSSHPrivateKey(openSSH: Fixtures.armor(copy))
                // Only the seed or the comment can change unnoticed: the public key is checked in three places.
                #expect(key.publicKey == original.publicKey, "round \(round), offset \(offset)")
                #expect((161..<193).contains(offset) || (229..<241).contains(offset), "round \(round), offset \(offset)")
            } catch {
                refused += 1
            }
        }
        // Most of the key is checked: the seed (32 bytes) and the comment (12) are all that may change.
        #expect(refused > 1500)

        // The text itself, mutated byte by byte (any byte, so not always UTF-8), only ever throws or parses.
        let text = Array(Fixtures.ed25519.utf8)
        for _ in 0..<2000 {
            var copy = text
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                copy[Int.random(in: 0..<copy.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            if let key = try? OpenSSHPrivateKey(openSSH: String(decoding: copy, as: UTF8.self)) {
                #expect(key.publicKey == original.publicKey)
            }
        }
    }
}
