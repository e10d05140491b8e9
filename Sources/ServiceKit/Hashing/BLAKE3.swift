/// BLAKE3's hash mode with its default 32-byte output, written from the BLAKE3 specification
/// (O'Connor, Aumasson, Neves, Wilcox-O'Hearn, 2020, §2 and §5): chunks of 1024 bytes compressed
/// block by block, their chaining values merged in a binary tree, the root compressed with the
/// `ROOT` flag. Portable and single-threaded: no SIMD, no keyed or derive-key mode, no extended
/// output. `BLAKE3Tests` checks it against the official test vectors and against Debian's
/// `b3sum` on random inputs.
public enum BLAKE3 {
    /// The 32-byte hash of `input`.
    public static func hash(_ input: some Collection<UInt8>) -> [UInt8] {
        var hasher = Hasher()
        if input.withContiguousStorageIfAvailable({ hasher.update($0) }) == nil {
            Array(input).withUnsafeBufferPointer { hasher.update($0) }
        }
        return hasher.finalize()
    }

    /// `hash(input)` as 64 lowercase hexadecimal digits, as `b3sum` prints it.
    public static func hex(_ input: some Collection<UInt8>) -> String {
        self.hash(input).lowercaseHex
    }

    static let iv: [UInt32] = [0x6A09_E667, 0xBB67_AE85, 0x3C6E_F372, 0xA54F_F53A, 0x510E_527F, 0x9B05_688C, 0x1F83_D9AB, 0x5BE0_CD19]
    static let permutation = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8]
    static let blockLength = 64
    static let chunkLength = 1024
    static let chunkStart: UInt32 = 1 << 0
    static let chunkEnd: UInt32 = 1 << 1
    static let parent: UInt32 = 1 << 2
    static let root: UInt32 = 1 << 3

    /// The message word each of the 7 rounds' 16 inputs takes: the permutation applied round
    /// after round (rather than permuting the words themselves).
    static let schedule: [Int] = {
        var rows = [Array(0..<16)]
        for _ in 1..<7 { rows.append(BLAKE3.permutation.map { rows[rows.count - 1][$0] }) }
        return rows.flatMap { $0 }
    }()

    @inline(__always)
    static func rotr(_ word: UInt32, _ bits: UInt32) -> UInt32 {
        (word >> bits) | (word << (32 - bits))
    }

    @inline(__always)
    static func g(_ a: inout UInt32, _ b: inout UInt32, _ c: inout UInt32, _ d: inout UInt32, _ x: UInt32, _ y: UInt32) {
        a = a &+ b &+ x
        d = self.rotr(d ^ a, 16)
        c = c &+ d
        b = self.rotr(b ^ c, 12)
        a = a &+ b &+ y
        d = self.rotr(d ^ a, 8)
        c = c &+ d
        b = self.rotr(b ^ c, 7)
    }

    /// The compression function: the full 16-word output (the first 8 are the new chaining value).
    static func compress(_ chainingValue: [UInt32], _ block: [UInt32], counter: UInt64, length: UInt32, flags: UInt32) -> [UInt32] {
        var s0 = chainingValue[0]
        var s1 = chainingValue[1]
        var s2 = chainingValue[2]
        var s3 = chainingValue[3]
        var s4 = chainingValue[4]
        var s5 = chainingValue[5]
        var s6 = chainingValue[6]
        var s7 = chainingValue[7]
        var s8 = self.iv[0]
        var s9 = self.iv[1]
        var s10 = self.iv[2]
        var s11 = self.iv[3]
        var s12 = UInt32(truncatingIfNeeded: counter)
        var s13 = UInt32(truncatingIfNeeded: counter >> 32)
        var s14 = length
        var s15 = flags
        block.withUnsafeBufferPointer { m in
            self.schedule.withUnsafeBufferPointer { k in
                for round in 0..<7 {
                    let r = round * 16
                    self.g(&s0, &s4, &s8, &s12, m[k[r]], m[k[r + 1]])
                    self.g(&s1, &s5, &s9, &s13, m[k[r + 2]], m[k[r + 3]])
                    self.g(&s2, &s6, &s10, &s14, m[k[r + 4]], m[k[r + 5]])
                    self.g(&s3, &s7, &s11, &s15, m[k[r + 6]], m[k[r + 7]])
                    self.g(&s0, &s5, &s10, &s15, m[k[r + 8]], m[k[r + 9]])
                    self.g(&s1, &s6, &s11, &s12, m[k[r + 10]], m[k[r + 11]])
                    self.g(&s2, &s7, &s8, &s13, m[k[r + 12]], m[k[r + 13]])
                    self.g(&s3, &s4, &s9, &s14, m[k[r + 14]], m[k[r + 15]])
                }
            }
        }
        return [
            s0 ^ s8, s1 ^ s9, s2 ^ s10, s3 ^ s11, s4 ^ s12, s5 ^ s13, s6 ^ s14, s7 ^ s15,
            s8 ^ chainingValue[0], s9 ^ chainingValue[1], s10 ^ chainingValue[2], s11 ^ chainingValue[3],
            s12 ^ chainingValue[4], s13 ^ chainingValue[5], s14 ^ chainingValue[6], s15 ^ chainingValue[7],
        ]
    }

    /// Up to 64 bytes as 16 little-endian words, zero-padded.
    static func words(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt32] {
        var words = [UInt32](repeating: 0, count: 16)
        words.withUnsafeMutableBufferPointer { words in
            var index = 0
            while index < bytes.count {
                words[index >> 2] |= UInt32(bytes[index]) << (8 * UInt32(index & 3))
                index += 1
            }
        }
        return words
    }

    /// What a node outputs before its flags say whether it is the root.
    struct Output {
        var chainingValue: [UInt32]
        var block: [UInt32]
        var counter: UInt64
        var length: UInt32
        var flags: UInt32

        var childChainingValue: [UInt32] {
            Array(BLAKE3.compress(self.chainingValue, self.block, counter: self.counter, length: self.length, flags: self.flags)[0..<8])
        }

        var rootBytes: [UInt8] {
            let words = BLAKE3.compress(self.chainingValue, self.block, counter: 0, length: self.length, flags: self.flags | BLAKE3.root)
            return words[0..<8].flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (8 * UInt32($0))) } }
        }
    }

    /// One chunk being compressed.
    struct ChunkState {
        var chainingValue = BLAKE3.iv
        var counter: UInt64
        var block = [UInt8](repeating: 0, count: BLAKE3.blockLength)
        var blockLength = 0
        var blocksCompressed = 0

        init(counter: UInt64) {
            self.counter = counter
        }

        var length: Int { self.blocksCompressed * BLAKE3.blockLength + self.blockLength }
        var startFlag: UInt32 { self.blocksCompressed == 0 ? BLAKE3.chunkStart : 0 }

        /// Takes as much of `input` as the chunk holds; answers how much.
        mutating func update(_ input: UnsafeBufferPointer<UInt8>) -> Int {
            var taken = 0
            while taken < input.count, self.length < BLAKE3.chunkLength {
                // A full block is compressed only once more input follows: the last one carries CHUNK_END.
                if self.blockLength == BLAKE3.blockLength {
                    let words = self.block.withUnsafeBufferPointer { BLAKE3.words($0) }
                    self.chainingValue = Array(
                        BLAKE3.compress(self.chainingValue, words, counter: self.counter, length: UInt32(BLAKE3.blockLength), flags: self.startFlag)[
                            0..<8
                        ]
                    )
                    self.blocksCompressed += 1
                    self.blockLength = 0
                }
                let count = min(BLAKE3.blockLength - self.blockLength, input.count - taken)
                for index in 0..<count { self.block[self.blockLength + index] = input[taken + index] }
                self.blockLength += count
                taken += count
            }
            return taken
        }

        var output: Output {
            let words = self.block.withUnsafeBufferPointer { BLAKE3.words(UnsafeBufferPointer(rebasing: $0[0..<self.blockLength])) }
            return Output(
                chainingValue: self.chainingValue,
                block: words,
                counter: self.counter,
                length: UInt32(self.blockLength),
                flags: self.startFlag | BLAKE3.chunkEnd
            )
        }
    }

    static func parentOutput(_ left: [UInt32], _ right: [UInt32]) -> Output {
        Output(chainingValue: self.iv, block: left + right, counter: 0, length: UInt32(self.blockLength), flags: self.parent)
    }

    /// The incremental hasher: the current chunk and a stack of the chaining values of the
    /// complete subtrees to its left.
    struct Hasher {
        var chunk = ChunkState(counter: 0)
        var stack: [[UInt32]] = []

        mutating func update(_ input: UnsafeBufferPointer<UInt8>) {
            var offset = 0
            while offset < input.count {
                // A full chunk is merged only once more input follows: the last one may be the root.
                if self.chunk.length == BLAKE3.chunkLength {
                    var chainingValue = self.chunk.output.childChainingValue
                    var total = self.chunk.counter + 1
                    // Each trailing zero bit of the chunk count completes a subtree.
                    while total & 1 == 0, let left = self.stack.popLast() {
                        chainingValue = BLAKE3.parentOutput(left, chainingValue).childChainingValue
                        total >>= 1
                    }
                    self.stack.append(chainingValue)
                    self.chunk = ChunkState(counter: self.chunk.counter + 1)
                }
                offset += self.chunk.update(UnsafeBufferPointer(rebasing: input[offset...]))
            }
        }

        func finalize() -> [UInt8] {
            var output = self.chunk.output
            for left in self.stack.reversed() {
                output = BLAKE3.parentOutput(left, output.childChainingValue)
            }
            return output.rootBytes
        }
    }
}
