import NIOCore
import NIOEmbedded
import ServiceKit
import Testing

@Suite("FlushBatcher: flushes held while a batch is open, one flush when it closes, never while the channel is full")
struct FlushBatcherTests {
    private func outbound(_ channel: EmbeddedChannel) throws -> [String] {
        var written: [String] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { written.append(String(buffer: buffer)) }
        return written
    }

    @Test("no batch open: every flush goes through")
    func passThrough() async throws {
        let channel = EmbeddedChannel()
        _ = try await FlushBatcher.install(on: channel)
        try await channel.writeAndFlush(ByteBuffer(string: "a"))
        #expect(try self.outbound(channel) == ["a"])
    }

    @Test("a batch holds the flushes of its writes and releases them in one")
    func batch() async throws {
        let channel = EmbeddedChannel()
        let batcher = try await FlushBatcher.install(on: channel)
        batcher.hold()
        for text in ["a", "b", "c"] {
            channel.write(ByteBuffer(string: text), promise: nil)
            channel.flush()
        }
        #expect(try self.outbound(channel).isEmpty)
        batcher.release()
        channel.embeddedEventLoop.run()
        #expect(try self.outbound(channel) == ["a", "b", "c"])
        // Nothing held: a second release flushes nothing more and does no harm.
        batcher.release()
        channel.embeddedEventLoop.run()
        #expect(try self.outbound(channel).isEmpty)
    }

    @Test("a channel that fills while flushes are held flushes at once, and is never held while full")
    func fullChannel() async throws {
        let channel = EmbeddedChannel()
        let batcher = try await FlushBatcher.install(on: channel)
        batcher.hold()
        channel.write(ByteBuffer(string: "a"), promise: nil)
        channel.flush()
        #expect(try self.outbound(channel).isEmpty)
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try self.outbound(channel) == ["a"])
        channel.write(ByteBuffer(string: "b"), promise: nil)
        channel.flush()
        #expect(try self.outbound(channel) == ["b"])
        batcher.release()
    }
}
