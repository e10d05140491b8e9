import Foundation
import ServiceKit
import TestSupport
import Testing

@Suite("BLAKE3: the official test vectors, and Debian's b3sum on random inputs")
struct BLAKE3Tests {
    /// BLAKE3's official test vectors (BLAKE3-team/BLAKE3, test_vectors/test_vectors.json): the
    /// first 32 bytes of the hash mode's output for inputs of `input_len` bytes 0, 1, …, 250, 0, 1, ….
    static let vectors: [(length: Int, hash: String)] = [
        (0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"),
        (1, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"),
        (1023, "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11"),
        (1024, "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"),
        (1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"),
        (2048, "e776b6028c7cd22a4d0ba182a8bf62205d2ef576467e838ed6f2529b85fba24a"),
        (2049, "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030"),
        (3072, "b98cb0ff3623be03326b373de6b9095218513e64f1ee2edd2525c7ad1e5cffd2"),
        (3073, "7124b49501012f81cc7f11ca069ec9226cecb8a2c850cfe644e327d22d3e1cd3"),
        (4096, "015094013f57a5277b59d8475c0501042c0b642e531b0a1c8f58d2163229e969"),
        (4097, "9b4052b38f1c5fc8b1f9ff7ac7b27cd242487b3d890d15c96a1c25b8aa0fb995"),
        (5120, "9cadc15fed8b5d854562b26a9536d9707cadeda9b143978f319ab34230535833"),
        (5121, "628bd2cb2004694adaab7bbd778a25df25c47b9d4155a55f8fbd79f2fe154cff"),
        (6144, "3e2e5b74e048f3add6d21faab3f83aa44d3b2278afb83b80b3c35164ebeca205"),
        (6145, "f1323a8631446cc50536a9f705ee5cb619424d46887f3c376c695b70e0f0507f"),
        (7168, "61da957ec2499a95d6b8023e2b0e604ec7f6b50e80a9678b89d2628e99ada77a"),
        (7169, "a003fc7a51754a9b3c7fae0367ab3d782dccf28855a03d435f8cfe74605e7817"),
        (8192, "aae792484c8efe4f19e2ca7d371d8c467ffb10748d8a5a1ae579948f718a2a63"),
        (8193, "bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3b"),
        (16384, "f875d6646de28985646f34ee13be9a576fd515f76b5b0a26bb324735041ddde4"),
        (31744, "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47"),
        (102400, "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085"),
    ]

    @Test("every official test vector of the hash mode, from a contiguous input and from one that is not")
    func vectors() {
        for (length, hash) in Self.vectors {
            let input = (0..<length).map { UInt8($0 % 251) }
            #expect(BLAKE3.hex(input) == hash, "input_len \(length)")
            // A collection without contiguous storage takes the other path.
            #expect(BLAKE3.hex((0..<length).lazy.map { UInt8($0 % 251) }) == hash, "input_len \(length), lazy")
        }
        #expect(BLAKE3.hash([UInt8]()).count == 32)
    }

    @Test("random inputs of random lengths hash as Debian's b3sum (the reference Rust implementation) hashes them")
    func againstB3sum() async throws {
        // The test command installs Debian's b3sum (scripts/lib/common.sh); without it this fails.
        let b3sum = try #require(
            ["/usr/bin/b3sum", "/usr/local/bin/b3sum"].first { FileManager.default.isExecutableFile(atPath: $0) },
            "b3sum is not installed (apt-get install b3sum)"
        )
        var generator = SplitMix64(state: UInt64.random(in: 0...UInt64.max))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blake3-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var expected: [String: String] = [:]
        var files: [String] = []
        for index in 0..<60 {
            // Lengths around the block and chunk edges as well as anywhere up to 40 KiB.
            let length =
                index < 20
                ? [0, 1, 63, 64, 65, 1023, 1024, 1025, 2047, 2048, 2049, 3071, 3072, 3073, 4095, 4096, 4097, 8191, 8192, 8193][index]
                : Int(generator.next() % 40_960)
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            let path = directory.appendingPathComponent("\(index)").path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            files.append(path)
            expected[path] = BLAKE3.hex(bytes)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: b3sum)
        process.arguments = files
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let reader = pipe.fileHandleForReading
        let output = try await offPool {
            let data = reader.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        #expect(process.terminationStatus == 0)
        let lines = output.split(separator: "\n")
        #expect(lines.count == files.count)
        for line in lines {
            let parts = line.split(separator: " ", maxSplits: 1)
            let path = String(parts[1].drop { $0 == " " })
            #expect(expected[path] == String(parts[0]), "\(path)")
        }
    }
}
