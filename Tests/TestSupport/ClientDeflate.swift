import CompressNIO
public import NIOCore

/// Messages compressed as a WebSocket client compresses them for `permessage-deflate`: raw
/// DEFLATE, each message ended by a sync flush whose `00 00 ff ff` tail is cut (RFC 7692
/// §7.2.1), for the tests that play a client.
public struct ClientDeflate {
    private let compressor: ZlibCompressor
    /// Each message stands alone (`client_no_context_takeover`), else the window runs on.
    private let noContextTakeover: Bool

    public init(noContextTakeover: Bool = true) throws {
        self.compressor = try ZlibCompressor(algorithm: .deflate, configuration: .init(windowSize: 15))
        self.noContextTakeover = noContextTakeover
    }

    /// The next message, compressed.
    public func compress(_ message: ByteBuffer) throws -> ByteBuffer {
        if self.noContextTakeover { try self.compressor.reset() }
        var input = message
        var output = ByteBuffer()
        output.reserveCapacity(self.compressor.maxSize(from: input))
        try self.compressor.deflate(from: &input, to: &output, flush: .sync)
        output.moveWriterIndex(to: output.writerIndex - 4)
        return output
    }
}
