public import NIOCore
import Synchronization

/// Lets a connection's writer send a batch of frames with one flush (one system call) instead
/// of a flush per frame, which is what each write through Hummingbird's WebSocket writer does.
///
/// Added first in the channel's pipeline (nearest the socket), it holds back the flushes that
/// pass it while the writer has a batch open, and flushes when the writer closes the batch. It
/// never holds data the socket could take while the channel is full: when the channel becomes
/// unwritable it flushes at once (otherwise the writer, waiting for writability, and the held
/// flush would wait for each other).
public final class FlushBatcher: ChannelDuplexHandler, @unchecked Sendable {
    public typealias InboundIn = ByteBuffer
    public typealias OutboundIn = ByteBuffer

    private let holding = Atomic<Bool>(false)
    private let held = Atomic<Bool>(false)
    /// Set in `handlerAdded` and used only on the channel's event loop.
    private var context: ChannelHandlerContext?
    private let eventLoop: any EventLoop

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Adds a batcher to `channel`'s pipeline, nearest the socket.
    public static func install(on channel: any Channel) async throws -> FlushBatcher {
        let batcher = FlushBatcher(eventLoop: channel.eventLoop)
        try await channel.pipeline.addHandler(batcher, position: .first).get()
        return batcher
    }

    /// Opens a batch: flushes from the writer's side are held until ``release()``.
    public func hold() {
        self.holding.store(true, ordering: .sequentiallyConsistent)
    }

    /// Closes the batch: flushes whatever was held, once.
    public func release() {
        self.holding.store(false, ordering: .sequentiallyConsistent)
        guard self.held.exchange(false, ordering: .sequentiallyConsistent) else { return }
        self.eventLoop.execute {
            self.context?.flush()
        }
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    public func flush(context: ChannelHandlerContext) {
        // A full channel is never held: the writer may be waiting for it to drain.
        // Sequentially consistent: the store to `held` here and the one to `holding` in
        // `release()` must not be reordered with the load that follows each.
        if self.holding.load(ordering: .sequentiallyConsistent), context.channel.isWritable {
            self.held.store(true, ordering: .sequentiallyConsistent)
            // A release between the two lines above would have found nothing held: check again.
            if self.holding.load(ordering: .sequentiallyConsistent) { return }
            self.held.store(false, ordering: .sequentiallyConsistent)
        }
        context.flush()
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        if !context.channel.isWritable, self.held.exchange(false, ordering: .sequentiallyConsistent) {
            context.flush()
        }
        context.fireChannelWritabilityChanged()
    }
}
